import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import TestSupport
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// A file's modification time is its own (``FileTimes``): it moves when its value does, never
/// when a sibling's does. Editors compare the time a file had when they read it with the time it
/// has when they write it: vim refuses to write when they differ ("changed since reading it"), and
/// `vim -es` then exits 0 having saved nothing. The kernel keeps what `ls` told it and asks again
/// after a read, so a time moved by a sibling's change showed the editor the old time first and
/// the new one at its write.
@Suite struct FileTimesTests {
    /// `sed -i`'s save: a scratch file written, then renamed onto the attribute.
    static func sedSave(_ k: EmbeddedKernel, _ folder: String, _ name: String, _ value: String) throws {
        try k.write("\(folder)/sedAb12Cd", Data((value + "\n").utf8))
        try k.rename("\(folder)/sedAb12Cd", "\(folder)/\(name)")
    }

    /// vim's save, as far as its check goes: the time it read the file at must still be the
    /// file's when it writes (else it writes nothing), then the file is rewritten and fsynced.
    static func vimSave(_ k: EmbeddedKernel, _ path: String, _ value: String, readAt time: Date) throws -> Bool {
        guard try k.stat(path).modificationTime == time else { return false }
        try k.write(path, Data((value + "\n").utf8), .init(fsync: true))
        return true
    }

    @Test func aSiblingsSaveLeavesAFilesTimeAlone() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let folder = "Employee/p20"
        _ = try k.list(folder)  // ls: the kernel keeps every file's attributes
        let lastNameRead = try k.stat("\(folder)/lastName").modificationTime
        _ = try k.read("\(folder)/lastName")
        let folderBefore = try k.stat(folder).modificationTime
        // Each way a sibling changes: sed -i, echo >, ln -sfn onto a to-one, a link into a
        // to-many folder, rm of an optional value.
        try Self.sedSave(k, folder, "firstName", "Sedded")
        try k.write("\(folder)/homepage", Data("https://example.org/echoed\n".utf8))
        try k.symlink("../../Department/p3", "\(folder)/CuTemp01")
        try k.rename("\(folder)/CuTemp01", "\(folder)/department")
        let other = try #require(
            try mount.keys("Project").first { !(try k.list("\(folder)/projects")).contains("p\($0)") })
        try k.symlink("../../../Project/p\(other)", "\(folder)/projects/p\(other)")
        try k.unlink("\(folder)/badgeNumber")
        #expect(try k.stat("\(folder)/lastName").modificationTime == lastNameRead, "a sibling's change moved it")
        #expect(try Self.vimSave(k, "\(folder)/lastName", "Vimmed", readAt: lastNameRead))
        // What changed shows it: the files saved, the folder, the to-many folder that took a link.
        #expect(try k.stat("\(folder)/lastName").modificationTime > lastNameRead)
        #expect(try k.stat("\(folder)/firstName").modificationTime > lastNameRead)
        #expect(try k.stat(folder).modificationTime > folderBefore)
        #expect(try k.stat("\(folder)/projects").modificationTime > folderBefore)
        #expect(try mount.text("\(folder)/firstName") == "Sedded\n")
        #expect(try mount.text("\(folder)/lastName") == "Vimmed\n")
        // The kernel was told of every time that moved: it keeps none that is not the mount's.
        #expect(try mount.remount().isEmpty)
        #expect(try mount.text("\(folder)/firstName") == "Sedded\n")
        #expect(try mount.text("\(folder)/lastName") == "Vimmed\n")
        #expect(try mount.text("\(folder)/homepage") == "https://example.org/echoed\n")
        #expect(mount.finish().isEmpty)
    }

    /// A value taken back at fsync (the store refused it at commit) shows its old content again:
    /// its time moves, and the kernel is told. An element's time is its own too.
    @Test func aValueTakenBackMovesItsTime() throws {
        let mount = try KernelMount(copying: CompositeFolderTests.cocktails)
        let k = mount.kernel
        _ = try k.list("Cocktail/p2/author")
        let element = try k.stat("Cocktail/p2/author/person").modificationTime
        try k.write("Cocktail/p2/cocktailName", Data("Taken Later\n".utf8))
        let set = try k.stat("Cocktail/p2/cocktailName").modificationTime
        try Self.sedSave(k, "Cocktail/p2/author", "place", "Elsewhere")
        #expect(try k.stat("Cocktail/p2/author/person").modificationTime == element, "a sibling element moved it")
        let other = try runTool(
            "sqlite3", ["-batch", mount.url.path, "UPDATE ZCOCKTAIL SET ZCOCKTAILNAME = 'Taken Later' WHERE Z_PK = 3"],
            timeout: 60)
        #expect(other.status == 0, "\(other.error)")
        #expect(errnoOf { try k.fsync("Cocktail/p2/cocktailName") } != nil, "not saved: the name is taken")
        #expect(try mount.text("Cocktail/p2/cocktailName") != "Taken Later\n", "taken back")
        #expect(try k.stat("Cocktail/p2/cocktailName").modificationTime > set)
        #expect(try mount.text("Cocktail/p2/author/place") == "Elsewhere\n")
        #expect(mount.finish().isEmpty)
    }

    /// The table is bounded: two generations of ``FileTimes/generationLimit`` files.
    @Test func theTimesKeptAreBounded() {
        let times = FileTimes()
        let limit = FileTimes.generationLimit
        for n in 0..<(2 * limit + 10) { times.touch(InodeNumber(UInt64(n + 2)), at: Date(timeIntervalSince1970: 1)) }
        #expect(times.count <= 2 * limit)
        #expect(times.time(of: InodeNumber(UInt64(2 * limit + 11))) == Date(timeIntervalSince1970: 1), "the latest")
        #expect(times.time(of: InodeNumber(2)) == nil, "the oldest are forgotten")
        // Touching again keeps one entry per file.
        times.touch(InodeNumber(UInt64(2 * limit + 11)), at: Date(timeIntervalSince1970: 2))
        #expect(times.time(of: InodeNumber(UInt64(2 * limit + 11))) == Date(timeIntervalSince1970: 2))
        #expect(times.count <= 2 * limit)
    }
}
