import Foundation
import ObjectGraph

/// One row of an iOS backup's manifest: a file, folder or link of the device, where the backup
/// keeps its bytes (``fileID``), and what the device said about it (``BackupFileFacts``).
public struct BackupRecord: Sendable, Hashable {
    /// What a row is, by Manifest.db's `flags` (Manifest.mbdb's mode gives the same).
    public enum Kind: Int64, Sendable {
        case file = 1
        case folder = 2
        case link = 4
    }

    /// `HomeDomain`, `AppDomain-com.example.app`, `AppDomainGroup-group.x`, `CameraRollDomain`, …
    public var domain: String
    /// The path inside the domain, `""` for the domain's own folder.
    public var relativePath: String
    /// The file's name in the backup: SHA-1 of `DOMAIN-relativePath`, 40 hexadecimal digits.
    public var fileID: String
    /// The row's kind; nil for a flag storefs does not know.
    public var kind: Kind?
    public var facts: BackupFileFacts

    public init(domain: String, relativePath: String, fileID: String, kind: Kind?, facts: BackupFileFacts) {
        self.domain = domain
        self.relativePath = relativePath
        self.fileID = fileID
        self.kind = kind
        self.facts = facts
    }
}

/// What the device recorded about a file (Manifest.db's `file` column, an `NSKeyedArchiver`
/// archive of an `MBFile`; Manifest.mbdb's fixed fields): shown as `user.backup.*` extended
/// attributes, as recorded. Numbers are kept as the archive has them, negative or huge: they are
/// shown, never used to size anything.
public struct BackupFileFacts: Sendable, Hashable {
    public var size: Int64?
    /// The mode with its type bits (`0o100644`).
    public var mode: Int64?
    /// Seconds since 1970.
    public var modified: Int64?
    public var statusChanged: Int64?
    public var birth: Int64?
    public var userID: Int64?
    public var groupID: Int64?
    public var inode: Int64?
    public var protectionClass: Int64?
    /// A link's target.
    public var target: String?
    /// Whether the file's bytes are encrypted in the backup (an `EncryptionKey` is recorded).
    public var encrypted = false

    public init() {}

    /// Reads an `MBFile` archive; nil when `data` is not one (the row then has no facts).
    public static func decode(archive data: Data, source: String) -> BackupFileFacts? {
        guard let archive = try? KeyedArchive(data: data, source: source), let file = try? archive.topObject("root")
        else { return nil }
        var facts = BackupFileFacts()
        facts.size = file.integer("Size")
        facts.mode = file.integer("Mode")
        facts.modified = file.integer("LastModified")
        facts.statusChanged = file.integer("LastStatusChange")
        facts.birth = file.integer("Birth")
        facts.userID = file.integer("UserID")
        facts.groupID = file.integer("GroupID")
        facts.inode = file.integer("InodeNumber")
        facts.protectionClass = file.integer("ProtectionClass")
        facts.target = try? file.string("Target")
        facts.encrypted = (try? file.object("EncryptionKey")) != nil
        return facts
    }

    /// The facts as `user.backup.*` attributes (those recorded).
    var attributes: [(name: String, value: String)] {
        var result: [(String, String)] = []
        if let size { result.append(("user.backup.size", String(size))) }
        if let mode { result.append(("user.backup.mode", String(mode, radix: 8))) }
        if let modified { result.append(("user.backup.mtime", Self.time(modified))) }
        if let statusChanged { result.append(("user.backup.ctime", Self.time(statusChanged))) }
        if let birth { result.append(("user.backup.birth", Self.time(birth))) }
        if let userID { result.append(("user.backup.uid", String(userID))) }
        if let groupID { result.append(("user.backup.gid", String(groupID))) }
        if let inode { result.append(("user.backup.inode", String(inode))) }
        if let protectionClass { result.append(("user.backup.protectionClass", String(protectionClass))) }
        if encrypted { result.append(("user.backup.encrypted", "true")) }
        return result
    }

    /// Seconds since 1970 as ISO 8601 in UTC, then the number itself: `2021-12-03T19:32:15Z
    /// (1638559935)`. Times past what a date can say show the number alone.
    static func time(_ seconds: Int64) -> String {
        guard seconds > -62_135_596_800, seconds < 253_402_300_800 else { return String(seconds) }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return "\(formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))) (\(seconds))"
    }
}
