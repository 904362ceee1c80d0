import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The tree a backup's manifest describes: `DOMAIN/RELATIVE/PATH` for every row that can be
/// shown, built once in memory from the rows (a phone's few hundred thousand take tens of MB).
///
/// A manifest is input: rows are checked before they become names, and a row that cannot be
/// shown is left out and counted by reason (``skipped``, the root's `user.backup.skippedReasons`):
///
/// - a domain or path component that is empty, `.` or `..`, longer than NAME_MAX or holding NUL
///   (an absolute path begins with an empty component), or a path deeper than
///   ``DevicePath/maximumDepth``;
/// - a file ID that is not 40 lowercase hexadecimal digits (so it can only name a file of the
///   backup's own folders), an unknown flag, a link without a target, a domain given as a file;
/// - a second row for a path already shown (the first row in the table's order wins);
/// - a file or link that other rows place files under (it is shown as the folder they need).
///
/// A file the manifest lists that the backup's folder lacks (or holds as anything but a regular
/// file) is not shown and counted in ``missingFiles``. Names come only from the manifest and
/// files are reached only by file ID, so no row reaches outside the backup's folder; paths are
/// strings, so rows cannot make a cycle of folders.
///
/// Threading: immutable; safe from any thread.
public final class BackupIndex: Sendable {
    public struct Node: Sendable {
        public var name: String
        public var kind: DeviceItem.Kind
        /// The row it comes from (an index into ``BackupIndex/records``); nil for a folder only
        /// implied by the paths under it.
        public var record: Int?
        var children: [Int32] = []
        /// A file's size in the backup's folder.
        var size: UInt64 = 0
        /// A file's inode and modification time in the backup's folder.
        var diskIdentity: String = ""
    }

    public let records: [BackupRecord]
    private let nodes: [Node]
    private let paths: [String: Int32]
    /// Files shown.
    public let presentFiles: Int
    /// Files the manifest lists that the backup's folder lacks.
    public let missingFiles: Int
    /// Rows left out, by reason.
    public let skipped: [String: Int]

    /// Builds the tree of `records`; `status` says whether a file ID's file is in the backup's
    /// folder (a regular file, reached without following a link) and gives its status.
    init(records: [BackupRecord], unreadableRows: Int, status: (String) -> stat?) {
        var nodes = [Node(name: "", kind: .folder, record: nil)]
        var paths: [String: Int32] = ["": 0]
        var skipped: [String: Int] = [:]
        var missing = 0
        if unreadableRows > 0 { skipped["rows that do not read"] = unreadableRows }
        func skip(_ reason: String) { skipped[reason, default: 0] += 1 }

        /// The folder at `components`, made (and files on the way turned into folders) as needed.
        func folder(_ components: ArraySlice<String>) -> Int32 {
            var current: Int32 = 0
            var path = ""
            for component in components {
                path = DevicePath.join(path, component)
                if let existing = paths[path] {
                    if nodes[Int(existing)].kind != .folder {
                        nodes[Int(existing)].kind = .folder
                        nodes[Int(existing)].record = nil
                        skip("a file or link with files under it (shown as a folder)")
                    }
                    current = existing
                    continue
                }
                let made = Int32(nodes.count)
                nodes.append(Node(name: component, kind: .folder, record: nil))
                nodes[Int(current)].children.append(made)
                paths[path] = made
                current = made
            }
            return current
        }

        for (row, record) in records.enumerated() {
            guard let kind = record.kind else {
                skip("unknown flags")
                continue
            }
            guard DevicePath.isValidName(record.domain) else {
                skip("a domain that cannot be a name")
                continue
            }
            let parts = DevicePath.components(record.relativePath)
            guard parts.allSatisfy(DevicePath.isValidName) else {
                skip(
                    record.relativePath.hasPrefix("/")
                        ? "absolute paths" : "paths with empty, . or .. components or names too long")
                continue
            }
            guard parts.count < DevicePath.maximumDepth else {
                skip("paths deeper than \(DevicePath.maximumDepth) folders")
                continue
            }
            var components = [record.domain]
            components.append(contentsOf: parts)
            let path = components.joined(separator: "/")
            var node = Node(name: components[components.count - 1], kind: kind.deviceKind, record: row)
            switch kind {
            case .file:
                guard Self.isFileID(record.fileID) else {
                    skip("file IDs that are not 40 hexadecimal digits")
                    continue
                }
                guard !parts.isEmpty else {
                    skip("a domain given as a file")
                    continue
                }
                guard let info = status(record.fileID) else {
                    missing += 1
                    continue
                }
                node.size = UInt64(max(0, info.st_size))
                node.diskIdentity = "\(info.st_dev).\(info.st_ino).\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
            case .link:
                guard let target = record.facts.target, !target.isEmpty, !target.utf8.contains(0), !parts.isEmpty else {
                    skip("links without a target")
                    continue
                }
            case .folder:
                break
            }
            if let existing = paths[path] {
                // A folder another row implied takes the folder's own row; any other second row
                // for a path is a duplicate.
                if kind == .folder, nodes[Int(existing)].kind == .folder, nodes[Int(existing)].record == nil {
                    nodes[Int(existing)].record = row
                } else {
                    skip("duplicate paths (the first row is shown)")
                }
                continue
            }
            let parent = folder(components.dropLast()[...])
            let made = Int32(nodes.count)
            nodes.append(node)
            nodes[Int(parent)].children.append(made)
            paths[path] = made
        }
        let names = nodes.map(\.name)
        for index in nodes.indices where nodes[index].children.count > 1 {
            nodes[index].children.sort { names[Int($0)].utf8.lexicographicallyPrecedes(names[Int($1)].utf8) }
        }
        self.records = records
        self.nodes = nodes
        self.paths = paths
        self.presentFiles = nodes.count { $0.kind == .file }
        self.missingFiles = missing
        self.skipped = skipped
    }

    /// Whether `fileID` is 40 lowercase hexadecimal digits, as every file ID iOS writes is.
    public static func isFileID(_ fileID: String) -> Bool {
        fileID.utf8.count == 40 && fileID.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The node at `path` (`""` the root).
    public func node(at path: String) -> Node? { paths[path].map { nodes[Int($0)] } }

    /// A folder's children, sorted by name.
    public func children(of folder: Node) -> [Node] { folder.children.map { nodes[Int($0)] } }

    /// Nodes in the tree, the root and implied folders included.
    public var count: Int { nodes.count }
}

extension BackupRecord.Kind {
    var deviceKind: DeviceItem.Kind {
        switch self {
        case .file: .file
        case .folder: .folder
        case .link: .link
        }
    }
}
