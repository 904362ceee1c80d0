@testable import Decoding
import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// Every rendering of ``ValueRendering/all`` beside a binary attribute (``RenderingFile``):
/// reachable by name where its renderer takes the value, exact sizes, following edits at once,
/// read-only, and nothing (ENOENT) for damaged payloads.
@Suite struct RenderingFileTests {
    /// `payload` as a gzip member of one stored (uncompressed) DEFLATE block.
    static func gzip(_ payload: [UInt8]) -> Data {
        var bytes: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        let length = UInt16(payload.count)
        bytes += [1, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)] + payload
        let crc = CRC32.checksum(payload)
        let size = UInt32(payload.count)
        bytes += [0, 8, 16, 24].map { UInt8((crc >> $0) & 0xFF) } + [0, 8, 16, 24].map { UInt8((size >> $0) & 0xFF) }
        return Data(bytes)
    }

    /// A message: field 1 the varint 150, field 2 the string "hello".
    static let message: [UInt8] = [0x08, 0x96, 0x01, 0x12, 0x05] + Array("hello".utf8)

    @Test func aCompressedMessageReadsInflatedAndAsText() throws {
        let mount = try KernelMount(objects: 40)
        let k = mount.kernel
        try k.write("Employee/p20/photo", Self.gzip(Self.message))
        #expect(try k.read("Employee/p20/photo.inflated") == Data(Self.message))
        let text = try mount.text("Employee/p20/photo.pb.txt")
        #expect(text == "1: 150\n2: \"hello\"\n")
        #expect(try k.stat("Employee/p20/photo.pb.txt").size == UInt64(text.utf8.count), "sizes are exact")
        #expect(try k.stat("Employee/p20/photo.inflated").size == UInt64(Self.message.count))
        #expect(errnoOf { _ = try k.stat("Employee/p20/photo.plist") } == ENOENT, "a renderer that does not apply")
        #expect(errnoOf { _ = try k.stat("Employee/p20/photo.json") } == ENOENT)
        #expect(
            String(decoding: try k.getxattr("Employee/p20/photo", "user.attribute.renderings"), as: UTF8.self)
                == "inflated,pb.txt")
        #expect(!(try k.list("Employee/p20")).contains { $0.hasPrefix("photo.") }, "reachable, not listed")
        for name in ["photo.inflated", "photo.pb.txt"] {
            #expect(errnoOf { try k.write("Employee/p20/\(name)", Data("x".utf8)) } == EPERM)
            #expect(errnoOf { try k.unlink("Employee/p20/\(name)") } == EPERM)
            #expect(errnoOf { try k.rename("Employee/p20/photo", "Employee/p20/\(name)") } == EPERM)
        }

        // An edit shows at once, in what is read and in the size the kernel kept.
        let other: [UInt8] = [0x08, 0x01, 0x1A, 0x03] + Array("bye".utf8)
        try k.write("Employee/p20/photo", Self.gzip(other))
        #expect(try mount.text("Employee/p20/photo.pb.txt") == "1: 1\n3: \"bye\"\n")
        #expect(try k.stat("Employee/p20/photo.inflated").size == UInt64(other.count))
        #expect(mount.finish().isEmpty)
    }

    @Test func aPropertyListReadsAsXML() throws {
        let mount = try KernelMount(objects: 40)
        let k = mount.kernel
        let binary = try PropertyListSerialization.data(
            fromPropertyList: ["theme": "dark"], format: .binary, options: 0)
        try k.write("Employee/p20/preferences", binary)
        let xml = try mount.text("Employee/p20/preferences.plist")
        #expect(
            xml.contains("<key>theme</key>") && xml.contains("<string>dark</string>") && xml.hasPrefix("<?xml"),
            "\(xml)")
        #expect(try k.stat("Employee/p20/preferences.plist").size == UInt64(xml.utf8.count))
        #expect(try mount.text("Employee/p20/preferences.json").contains("\"dark\""))
        #expect(
            String(decoding: try k.getxattr("Employee/p20/preferences", "user.attribute.renderings"), as: UTF8.self)
                == "json,plist")
        // The same list gzipped: inflated first.
        try k.write("Employee/p20/preferences", Self.gzip(Array(binary)))
        #expect(try mount.text("Employee/p20/preferences.plist") == xml)
        #expect(try k.read("Employee/p20/preferences.inflated") == binary)
        #expect(mount.finish().isEmpty)
    }

    /// Damaged payloads render nothing, and never crash: a gzip member cut short, one whose
    /// checksum is wrong, a length that runs past the value.
    @Test func damagedPayloadsHaveNoRendering() throws {
        let mount = try KernelMount(objects: 40)
        let k = mount.kernel
        let whole = Self.gzip(Self.message)
        var wrongChecksum = whole
        wrongChecksum[wrongChecksum.count - 5] ^= 0xFF
        for damaged in [
            whole.prefix(whole.count - 6), wrongChecksum, Data([0x1F, 0x8B, 8]), Data([0x12, 0xFF, 0xFF, 0xFF, 0x0F])
        ] {
            try k.write("Employee/p20/photo", damaged)
            for suffix in ["inflated", "pb.txt", "plist", "json"] {
                #expect(
                    errnoOf { _ = try k.read("Employee/p20/photo.\(suffix)") } == ENOENT, "\(Array(damaged)) \(suffix)")
            }
        }
        #expect(try k.read("Employee/p20/photo") == Data([0x12, 0xFF, 0xFF, 0xFF, 0x0F]), "the raw value stays")
        #expect(mount.finish().isEmpty)
    }

    /// Inodes: the attribute's index and the renderer come back from a rendering's inode.
    @Test func renderingInodesNameAttributeAndRenderer() {
        let object = ObjectID(entity: EntityID(3), key: PrimaryKey(77))
        var seen: Set<UInt64> = []
        for renderer in ValueRendering.all.indices {
            for index in [0, 1, 511] {
                let node = Node.rendering(object, index, renderer)
                #expect(Node(node.inode) == node)
                #expect(RenderingFile.parts(of: node) == (index, renderer))
                seen.insert(node.inode.rawValue)
            }
        }
        #expect(seen.count == ValueRendering.all.count * 3)
        #expect(Node.rendering(object, 5) == Node.rendering(object, 5, 0), "`.json` keeps the inodes it had")
    }
}
