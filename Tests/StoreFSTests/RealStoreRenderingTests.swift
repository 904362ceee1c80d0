import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What the mapping shows of real apps' stores beside their values and in `.history`, kernel-free
/// (``KernelMount`` on copies of corpus stores): every note of a Notes store (gzipped protobuf)
/// as text holding its title, Photos' archived values as an XML property list, hostile payloads
/// (a truncated gzip, a zip bomb) that answer ENOENT at once, and a commit that is a new
/// transaction in `.history` without a remount.
@Suite struct RealStoreRenderingTests {
    static let notes = "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite"
    static let photos = "RhetTbull_merge_photos_libraries_Photos.sqlite"

    /// The acceptance: `ICNoteData/pN/data.pb.txt` holds the title `ICNoteData/pN/note/title`
    /// shows, for every note that is not password-protected.
    @Test func everyNoteReadsAsTextWithItsTitle() throws {
        let mount = try KernelMount(corpus: Self.notes, readOnly: true)
        let k = mount.kernel
        var titled = 0
        var readable: [String] = []
        for name in try k.list("ICNoteData") {
            let folder = "ICNoteData/\(name)"
            guard (try? k.stat("\(folder)/data", follow: true))?.kind == .regularFile else { continue }
            if try mount.text("\(folder)/note/isPasswordProtected") == "true\n" {
                #expect(errnoOf { _ = try k.read("\(folder)/data.pb.txt") } != nil, "\(name): encrypted, no protobuf")
                continue
            }
            let text = try mount.text("\(folder)/data.pb.txt")
            readable.append(folder)
            #expect(text.hasPrefix("1: 0\n2 {\n"), "\(name)")
            #expect(try k.stat("\(folder)/data.pb.txt").size == UInt64(text.utf8.count), "\(name): stat's size")
            #expect(!(try k.read("\(folder)/data.inflated")).isEmpty)
            guard let title = try? mount.text("\(folder)/note/title") else { continue }
            titled += 1
            let escaped = String(title.dropLast()).replacingOccurrences(of: "\"", with: "\\\"")
            #expect(text.contains(escaped), "\(name): \(title) not in \(text.prefix(300))")
        }
        #expect(titled == 6)
        let folder = try #require(readable.first)
        #expect(
            String(decoding: try k.getxattr("\(folder)/data", "user.attribute.renderings"), as: UTF8.self)
                == "inflated,pb.txt")
        #expect(try k.list(folder).allSatisfy { !$0.contains(".") }, "not listed")
        #expect(errnoOf { _ = try k.read("\(folder)/data.plist") } == ENOENT, "a renderer that does not apply")
        #expect(mount.finish().isEmpty)
    }

    /// Photos' location names (a keyed archive) as XML, and as JSON.
    @Test func anArchivedValueReadsAsAPropertyList() throws {
        let mount = try KernelMount(corpus: Self.photos, readOnly: true)
        let k = mount.kernel
        // `grep -l Washington Moment/*/localizedLocationNames.json | head -1`
        let moment = try #require(
            try k.list("Moment").first { name in
                guard let json = try? mount.text("Moment/\(name)/localizedLocationNames.json") else { return false }
                return json.contains("Washington")
            })
        let base = "Moment/\(moment)/localizedLocationNames"
        let xml = try mount.text("\(base).plist")
        #expect(xml.contains("<string>Washington</string>") && xml.hasPrefix("<?xml"), "\(xml)")
        #expect(xml.hasSuffix("</plist>\n"))
        #expect(errnoOf { _ = try k.read("\(base).pb.txt") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }

    /// A zip bomb (100 MB of zeros, gzipped to 100 kB: past the 64 MiB bound) and a truncated gzip
    /// have no rendering (ENOENT at once); a payload within the bounds inflates whole, with stat's
    /// size exact.
    @Test func hostilePayloadsAreBounded() throws {
        let mount = try KernelMount(objects: 50)
        let k = mount.kernel
        /// `head -c SIZE /dev/zero | gzip -9`.
        func gzippedZeros(_ size: Int) throws -> Data {
            let file = mount.folder.appendingPathComponent("zeros-\(size).gz")
            let gzip = try runTool(
                "sh", ["-c", "head -c \(size) /dev/zero | gzip -9 > '\(file.path)'"], timeout: 120)
            try #require(gzip.status == 0, "gzip: \(gzip.error)")
            return try Data(contentsOf: file)
        }
        let bomb = try gzippedZeros(100_000_000)
        try k.write("Employee/p1/photo", bomb)
        for suffix in ["inflated", "pb.txt", "plist", "json"] {
            #expect(errnoOf { _ = try k.read("Employee/p1/photo.\(suffix)") } == ENOENT, "\(suffix)")
        }
        try k.write("Employee/p1/photo", bomb.prefix(1000))
        #expect(errnoOf { _ = try k.read("Employee/p1/photo.inflated") } == ENOENT)

        try k.write("Employee/p1/photo", try gzippedZeros(10_000_000))
        #expect(try k.stat("Employee/p1/photo.inflated").size == 10_000_000)
        #expect(try k.read("Employee/p1/photo.inflated") == Data(count: 10_000_000))
        #expect(mount.finish().isEmpty)
    }

    /// A commit (of a Notes store) is a new `tN` at once, without a remount: the folder updated,
    /// with `user.history.changed` naming the attribute.
    @Test func aCommitShowsUpAsANewTransaction() throws {
        let mount = try KernelMount(corpus: Self.notes)
        let k = mount.kernel
        let before = try k.list(".history")
        #expect(before.count == 51)
        try k.write("ICFolder/p5/title", Data("Renamed\n".utf8), .init(fsync: true))
        let added = try k.list(".history").filter { !before.contains($0) }
        #expect(added.count == 1, "\(added)")
        let new = try #require(added.first)
        #expect(try k.list(".history/\(new)/updated") == ["ICFolder-p5"])
        #expect(
            String(
                decoding: try k.getxattr(".history/\(new)/updated", "user.history.changed.ICFolder-p5"), as: UTF8.self)
                == "title")
        #expect(try mount.text(".history/\(new)/updated/ICFolder-p5/title") == "Renamed\n")
        #expect(try mount.text(".history/\(new)/author") == "storefs\n")
        #expect(
            try k.list(".history/\(new)").sorted() == [
                "author", "bundleID", "deleted", "inserted", "processID", "timestamp", "updated"
            ])
        #expect(mount.finish().isEmpty)
    }

    /// Stores that keep no history have no `.history`.
    @Test func storesWithoutHistoryHaveNone() throws {
        let mount = try KernelMount(objects: 50)
        #expect(errnoOf { _ = try mount.kernel.list(".history") } == ENOENT)
        #expect(mount.finish().isEmpty)
    }
}
