import Digest
import Foundation

/// Reads `Manifest.mbdb`, the manifest of backups made by iOS 5 to 9: `mbdb\x05\x00`, then one
/// record per file: domain, path, link target, data hash and encryption key (each a big-endian
/// 16-bit length and the bytes, 0xFFFF for none), mode (16 bits), inode (64), user and group
/// (32 each), modification, access and change times (32 each), size (64), protection class (8),
/// and a count (8) of name/value property pairs. A file's name in the backup is the SHA-1 of
/// `DOMAIN-path`, in the backup's top folder.
///
/// Every length is checked against what is left: a truncated or hostile file ends the reading
/// with the records read so far and says how many bytes were left over.
enum ManifestMBDB {
    static let magic: [UInt8] = Array("mbdb".utf8) + [5, 0]

    /// The records, and whether the file ended inside a record (its rest is left out).
    static func records(_ bytes: [UInt8]) throws(DeviceError) -> (records: [BackupRecord], truncated: Bool) {
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            throw DeviceError(
                .unsupported, "Manifest.mbdb does not start with mbdb\\x05\\x00: not a manifest storefs reads")
        }
        var reader = Reader(bytes: bytes, position: magic.count)
        var records: [BackupRecord] = []
        while reader.position < bytes.count {
            guard records.count < ManifestDatabase.maximumRows else {
                throw DeviceError(
                    .tooLarge,
                    "Manifest.mbdb lists more than \(ManifestDatabase.maximumRows) files, more than storefs reads")
            }
            guard let record = reader.record() else { return (records, true) }
            records.append(record)
        }
        return (records, false)
    }

    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        mutating func integer(_ size: Int) -> UInt64? {
            guard size <= bytes.count - position else { return nil }
            var value: UInt64 = 0
            for byte in bytes[position..<(position + size)] { value = value << 8 | UInt64(byte) }
            position += size
            return value
        }

        /// A string; `.some(nil)` for 0xFFFF (none).
        mutating func string() -> String?? {
            guard let length = integer(2) else { return nil }
            if length == 0xFFFF { return .some(nil) }
            guard Int(length) <= bytes.count - position else { return nil }
            let text = String(decoding: bytes[position..<(position + Int(length))], as: UTF8.self)
            position += Int(length)
            return .some(text)
        }

        mutating func record() -> BackupRecord? {
            guard let domain = string(), let path = string(), let target = string(), string() != nil,
                let key = string(), let mode = integer(2), let inode = integer(8), let user = integer(4),
                let group = integer(4), let modified = integer(4), integer(4) != nil, let changed = integer(4),
                let size = integer(8), let protection = integer(1), let properties = integer(1)
            else { return nil }
            for _ in 0..<properties {
                guard string() != nil, string() != nil else { return nil }
            }
            var facts = BackupFileFacts()
            facts.mode = Int64(mode)
            facts.inode = Int64(bitPattern: inode)
            facts.userID = Int64(user)
            facts.groupID = Int64(group)
            facts.modified = Int64(modified)
            facts.statusChanged = Int64(changed)
            facts.size = Int64(bitPattern: size)
            facts.protectionClass = Int64(protection)
            facts.target = target ?? nil
            facts.encrypted = (key ?? nil) != nil
            let kind: BackupRecord.Kind? =
                switch mode & 0xF000 {
                case 0xA000: .link
                case 0x8000: .file
                case 0x4000: .folder
                default: nil
                }
            let domainName = (domain ?? nil) ?? ""
            let relativePath = (path ?? nil) ?? ""
            return BackupRecord(
                domain: domainName, relativePath: relativePath, fileID: SHA1.hex("\(domainName)-\(relativePath)"),
                kind: kind, facts: facts)
        }
    }
}
