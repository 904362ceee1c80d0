import Foundation
import TestSupport
import Testing

/// Decoded values beside binary attributes, read with cat through a real mount: every note of a
/// Notes store (gzipped protobuf) as text holding its title, Photos' archived values as an XML
/// property list, and hostile payloads (a truncated gzip, a zip bomb) that answer ENOENT at once.
@Suite(.serialized) struct RenderingFilesTests {
    /// The acceptance, through the mount: `cat ICNoteData/pN/data.pb.txt` holds the title
    /// `cat ICNoteData/pN/note/title` shows, for every note that is not password-protected.
    @Test func everyNoteReadsAsTextWithItsTitle() throws {
        let mount = try MountedStore(
            copying: Corpus.url("sqlite/RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"), options: ["ro"]
        )
        defer { try? mount.unmount() }
        var titled = 0
        var readable: [String] = []
        for name in try run("ls", ["\(mount.path)/ICNoteData"]).lines {
            let folder = "\(mount.path)/ICNoteData/\(name)"
            guard try run("test", ["-f", "\(folder)/data"]).status == 0 else { continue }
            if try run("cat", ["\(folder)/note/isPasswordProtected"]).output == "true\n" {
                #expect(try run("cat", ["\(folder)/data.pb.txt"]).status != 0, "\(name): encrypted, no protobuf")
                continue
            }
            let text = try run("cat", ["\(folder)/data.pb.txt"])
            readable.append(folder)
            #expect(text.status == 0 && text.output.hasPrefix("1: 0\n2 {\n"), "\(name): \(text.error)")
            let size = try run("stat", ["-c", "%s", "\(folder)/data.pb.txt"]).output
            #expect(size == "\(text.output.utf8.count)\n", "\(name): stat's size is what cat reads")
            let inflated = try run("cat", ["\(folder)/data.inflated"])
            #expect(inflated.status == 0 && !inflated.output.isEmpty)
            let title = try run("cat", ["\(folder)/note/title"])
            guard title.status == 0 else { continue }
            titled += 1
            let escaped = String(title.output.dropLast()).replacingOccurrences(of: "\"", with: "\\\"")
            #expect(text.output.contains(escaped), "\(name): \(title.output) not in \(text.output.prefix(300))")
        }
        #expect(titled == 6)
        let folder = try #require(readable.first)
        let renderings = try run("getfattr", ["--only-values", "-n", "user.attribute.renderings", "\(folder)/data"])
        #expect(renderings.output == "inflated,pb.txt", "\(renderings)")
        #expect(
            try run("ls", ["-a", folder]).lines.allSatisfy { !$0.contains(".") || $0 == "." || $0 == ".." },
            "not listed")
        #expect(
            try run("cat", ["\(folder)/data.plist"]).error.contains("No such file"), "a renderer that does not apply")
    }

    /// Photos' location names (a keyed archive) as XML, and as JSON.
    @Test func anArchivedValueReadsAsAPropertyList() throws {
        let mount = try MountedStore(
            copying: Corpus.url("sqlite/RhetTbull_merge_photos_libraries_Photos.sqlite"), options: ["ro"])
        defer { try? mount.unmount() }
        let found = try sh(
            "grep -l Washington \(mount.path)/Moment/*/localizedLocationNames.json | head -1")
        let json = try #require(found.lines.first, "\(found.error)")
        let plist = String(json.dropLast(".json".count)) + ".plist"
        let xml = try run("cat", [plist])
        #expect(
            xml.status == 0 && xml.output.contains("<string>Washington</string>") && xml.output.hasPrefix("<?xml"),
            "\(xml)")
        #expect(xml.output.hasSuffix("</plist>\n"))
        #expect(try run("cat", [String(json.dropLast(".json".count)) + ".pb.txt"]).error.contains("No such file"))
    }

    /// A zip bomb (100 MB of zeros, gzipped to 100 kB: past the 64 MiB bound) and a truncated gzip
    /// have no rendering (ENOENT at once, the server alive); a payload within the bounds inflates
    /// whole, with stat's size exact.
    @Test func hostilePayloadsAreBounded() throws {
        let mount = try MountedStore(objects: 50)
        defer { try? mount.unmount() }
        let photo = "\(mount.path)/Employee/p1/photo"
        let bomb = mount.directory.appendingPathComponent("bomb.gz").path
        #expect(try sh("head -c 100000000 /dev/zero | gzip -9 > \(bomb)").status == 0)
        #expect(try run("cp", [bomb, photo]).status == 0)
        for suffix in ["inflated", "pb.txt", "plist", "json"] {
            let result = try run("timeout", ["60", "cat", "\(photo).\(suffix)"])
            #expect(result.status == 1 && result.error.contains("No such file"), "\(suffix): \(result)")
        }
        #expect(try sh("head -c 1000 \(bomb) > \(photo)").status == 0)
        #expect(try run("timeout", ["60", "cat", "\(photo).inflated"]).error.contains("No such file"))

        let ten = mount.directory.appendingPathComponent("ten.gz").path
        #expect(try sh("head -c 10000000 /dev/zero | gzip > \(ten) && cp \(ten) \(photo)").status == 0)
        #expect(try run("stat", ["-c", "%s", "\(photo).inflated"]).output == "10000000\n")
        #expect(try sh("head -c 10000000 /dev/zero | timeout 60 cmp - \(photo).inflated").status == 0)
        #expect(try run("cat", ["\(mount.path)/Employee/p1/photo.inflated"]).output.utf8.count == 10_000_000)
        #expect(try run("ls", ["\(mount.path)/Employee/p1"]).status == 0, "the server is alive")
    }
}
