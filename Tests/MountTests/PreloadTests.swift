import Foundation
import ObjectGraph
import SQLiteStore
import TestSupport
@testable import StoreFS
import Testing

/// On a read-only mount, reading one attribute file of an object folder puts its siblings' text
/// into the kernel's page cache: reading them afterwards costs no request, gives exactly the
/// values the store holds, and a value another process changes meanwhile is read new.
@Suite(.serialized) struct PreloadTests {
    /// Waits (up to 5 s) until the mount has sent at least `count` preloads in all.
    func waitForPreloads(_ mount: MountedStore, atLeast count: Int) throws -> Int {
        var sent = 0
        for _ in 0..<100 {
            sent = try mount.fuseCount("preloads")
            if sent >= count { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return sent
    }

    @Test func readingOneFileOfAFolderServesItsSiblingsFromThePageCache() throws {
        let mount = try MountedStore(objects: 300, options: ["ro"])
        defer { try? mount.unmount() }
        let engine = try mount.engine()
        let context = engine.newContext()
        let model = engine.model
        let employee = try context.objectIDs(of: try #require(model.entityID(named: "Employee")))[5]
        let snapshot = try #require(try context.snapshot(of: employee))
        let folder = "\(mount.path)/Employee/\(employee.key)"
        let files = try run("ls", [folder]).lines  // the kernel learns the folder's files
        let attributes = model[employee.entity].persistentAttributes.filter { snapshot.attributes[$0.name] != nil }
        #expect(attributes.count >= 8 && attributes.allSatisfy { files.contains($0.name) })

        let first = try #require(attributes.first)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(first.name)"))
                == ValueText.content(
                    of: try #require(snapshot.attributes[first.name]), type: first.type))
        let siblings = attributes.dropFirst()
        let preloaded = try waitForPreloads(mount, atLeast: siblings.count)
        #expect(
            preloaded >= siblings.count, "reading \(first.name) preloaded \(preloaded) of \(siblings.count) siblings")

        let readsBefore = try mount.fuseCount("read")
        for attribute in siblings {
            let path = "\(folder)/\(attribute.name)"
            let expected = ValueText.content(
                of: try #require(snapshot.attributes[attribute.name]), type: attribute.type)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == expected, "\(path)")
            let size = try run("stat", ["-c", "%s", path]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(size == String(expected.count), "stat size of \(path)")
        }
        #expect(try mount.fuseCount("read") == readsBefore, "the siblings were read from the page cache")
    }

    /// A Person with both names whose folder is listed and whose firstName was read (so its
    /// lastName was preloaded); its key, folder and lastName as first read.
    func preloadedPerson(_ mount: MountedStore) throws -> (key: String, folder: String, lastName: String) {
        let key = try run(
            "sqlite3",
            [mount.store.path, "select min(Z_PK) from ZPERSON where ZLASTNAME is not null and ZFIRSTNAME is not null"]
        )
        .output.trimmingCharacters(in: .whitespacesAndNewlines)
        let folder = "\(mount.path)/Person/p\(key)"
        #expect(try run("ls", [folder]).lines.contains("lastName"))
        #expect(try run("cat", ["\(folder)/firstName"]).status == 0)
        #expect(try waitForPreloads(mount, atLeast: 1) >= 1)
        return (key, folder, try run("cat", ["\(folder)/lastName"]).output)
    }

    /// Sets the lastName of row `key` with sqlite3, then reads the file until it shows `value`
    /// (up to 5 s: the mount polls the store once a second); what it showed last.
    func lastNameAfterChangingIt(to value: String, _ mount: MountedStore, key: String, folder: String, was old: String)
        throws -> String
    {
        let update = try run(
            "sqlite3",
            [
                "-cmd", ".timeout 5000", mount.store.path,
                "update ZPERSON set ZLASTNAME = '\(value)', Z_OPT = Z_OPT + 1 where Z_PK = \(key)"
            ])
        #expect(update.status == 0, "\(update.error)")
        var now = old
        for _ in 0..<50 where now != value + "\n" {
            Thread.sleep(forTimeInterval: 0.1)
            now = try run("cat", ["\(folder)/lastName"]).output
        }
        return now
    }

    @Test func aSiblingAnotherProcessChangesIsReadNew() throws {
        let mount = try MountedStore(objects: 300, options: ["ro"])
        defer { try? mount.unmount() }
        let (key, folder, old) = try preloadedPerson(mount)
        #expect(!old.isEmpty)
        let now = try lastNameAfterChangingIt(to: "Changed-elsewhere", mount, key: key, folder: folder, was: old)
        #expect(now == "Changed-elsewhere\n", "the preloaded page was dropped when the store changed (was \(old))")
        #expect(try run("stat", ["-c", "%s", "\(folder)/lastName"]).output == "18\n")
    }

    /// A folder preloaded and then evicted from a small row cache by reading others: its pages are
    /// still dropped when another process changes it.
    @Test func aPreloadedFolderWhoseRowWasEvictedIsReadNewAfterAChange() throws {
        let mount = try MountedStore(objects: 3_000, options: ["ro", "cache_size=1"])
        defer { try? mount.unmount() }
        let (key, folder, old) = try preloadedPerson(mount)
        // Read 2,500 other objects' rows: a 1 MiB cache holds fewer than a thousand.
        let others = try sh(
            "ls \(mount.path)/Person | grep -vx 'p\(key)' | head -2500 | sed 's|^|\(mount.path)/Person/|;s|$|/firstName|' | xargs cat > /dev/null 2>&1; true"
        )
        #expect(others.status == 0)
        #expect(try mount.stats()["cachedObjects"] as? Int ?? 0 < 2_000, "the cache was turned over")
        let now = try lastNameAfterChangingIt(to: "Changed-after-eviction", mount, key: key, folder: folder, was: old)
        #expect(now == "Changed-after-eviction\n", "the preloaded page was dropped (was \(old))")
    }

    @Test func aReadWriteMountPreloadsNothing() throws {
        // Its files are opened for direct I/O (a writer's O_TRUNC must not show a reader an empty
        // file), so pages put in the cache would never be read.
        let mount = try MountedStore(objects: 100)
        defer { try? mount.unmount() }
        #expect(try sh("cat \(mount.path)/Employee/*/firstName > /dev/null").status == 0)
        #expect(try mount.fuseCount("read") > 0)
        #expect(try mount.fuseCount("preloads") == 0)
    }
}
