import Foundation
import FuseKit
import ObjectGraph

/// `MNT/.history`: the store's persistent history as folders (docs/SEMANTICS.md, "History
/// folders"). A folder `tN` per transaction, in order of N; in it the files `timestamp`, `author`,
/// `bundleID`, `processID` and `contextName` (a name the transaction does not have has no file,
/// as a nil attribute has none), and the folders `inserted`, `updated` and `deleted`. Inserts and
/// updates are links to the objects' folders (`../../../Entity/pK`), an update's link naming the
/// properties it changed in `user.history.changed`; a delete is a folder of the values its
/// tombstone keeps, one file per attribute in the text form of attribute files.
///
/// Everything is read-only (EPERM for any change; EROFS on read-only mounts). `.history` is
/// reachable by name and not listed at the root (as `.fetchRequests`), exists only when the store
/// keeps history, and is listed afresh from the store on every listing (in pages, without the
/// changes), so transactions committed since, by the mount or another process, appear at once.
/// A transaction's folder reads that one transaction, by its key.
///
/// The family is one node kind (``HistoryNode`` says which node is what), whose kind counts as a
/// folder's: the kernel asks folder operations only of nodes it was told are folders.
struct HistoryTree: NodeType {
    typealias Part = HistoryNode.Part

    var isDirectory: Bool { true }
    /// `.history` gains transactions as they are committed.
    var keepsListings: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node {
        switch node.historyPart {
        case .transaction?: HistoryNode.folder
        case .field?, .changes?: HistoryNode.transaction(node.key.rawValue)
        case .link?, .tombstone?:
            (try? mapping.historyChange(node.key.rawValue)).map {
                HistoryNode.changes($0.transaction.number, $0.change.kind)
            }
                ?? HistoryNode.folder
        case .value?: HistoryNode.tombstone(node.key.rawValue)
        default: .root
        }
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        switch node.historyPart {
        case .folder?: [HistoryNode.folderName]
        case .transaction?: [HistoryNode.folderName, HistoryNode.name(of: node.key.rawValue)]
        case .changes? where node.property < HistoryNode.changeFolders.count:
            [HistoryNode.folderName, HistoryNode.name(of: node.key.rawValue), HistoryNode.changeFolders[node.property]]
        default: [HistoryNode.folderName]
        }
    }

    // MARK: - What each node is

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        switch node.historyPart {
        case .folder?:
            guard mapping.historyStore != nil else { throw .notFound }
            return mapping.make(node, .directory, permissions: 0o555)
        case .transaction?:
            return mapping.make(
                node, .directory, permissions: 0o555, time: try mapping.historyTimestamp(node.key.rawValue))
        case .changes?:
            guard node.property < HistoryNode.changeFolders.count else { throw .notFound }
            return mapping.make(
                node, .directory, permissions: 0o555, time: try mapping.historyTimestamp(node.key.rawValue))
        case .field?:
            let transaction = try mapping.historyTransaction(node.key.rawValue).transaction
            let content = try Self.content(of: node, mapping)
            return mapping.make(
                node, .regularFile, permissions: 0o444, size: content.count, time: transaction.timestamp)
        case .link?:
            let (transaction, change) = try change(node, mapping)
            guard change.kind != .delete else { throw .notFound }
            return mapping.make(
                node, .symbolicLink, size: try target(of: change, mapping).utf8.count, time: transaction.timestamp)
        case .tombstone?:
            let (transaction, change) = try change(node, mapping)
            guard change.kind == .delete else { throw .notFound }
            return mapping.make(node, .directory, permissions: 0o555, time: transaction.timestamp)
        case .value?:
            let (transaction, _) = try change(node, mapping)
            let content = try Self.content(of: node, mapping)
            return mapping.make(
                node, .regularFile, permissions: 0o444, size: content.count, time: transaction.timestamp)
        case nil: throw .notFound
        }
    }

    /// The change a link, tombstone or value node is of, when the mount shows it.
    private func change(_ node: Node, _ mapping: Mapping) throws(FileSystemError)
        -> (transaction: HistoryTransaction, change: HistoryChange)
    {
        let found = try mapping.historyChange(node.key.rawValue)
        guard Self.isShown(found.change, mapping) else { throw .notFound }
        return found
    }

    /// Whether a change has a place in the tree: its number and object fit an inode.
    static func isShown(_ change: HistoryChange, _ mapping: Mapping) -> Bool {
        Node.fits(PrimaryKey(change.changeID)) && mapping.isValid(change.objectID.entity)
            && Node.fits(change.objectID.key)
    }

    private func target(of change: HistoryChange, _ mapping: Mapping) throws(FileSystemError) -> String {
        guard mapping.isValid(change.objectID.entity) else { throw .notFound }
        return "../../../\(mapping.model[change.objectID.entity].name)/\(change.objectID.key)"
    }

    // MARK: - Folders

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        switch node.historyPart {
        case .folder?:
            guard let number = HistoryNode.number(named: name) else { throw .notFound }
            _ = try mapping.historyTimestamp(number)
            return HistoryNode.transaction(number)
        case .transaction?:
            let number = node.key.rawValue
            if let kind = HistoryNode.changeFolders.firstIndex(of: name).flatMap({
                HistoryChange.Kind(rawValue: Int64($0))
            }) {
                _ = try mapping.historyTimestamp(number)
                return HistoryNode.changes(number, kind)
            }
            guard let index = HistoryNode.fields.firstIndex(of: name) else { throw .notFound }
            let field = HistoryNode.field(number, index)
            _ = try Self.content(of: field, mapping)
            return field
        case .changes?:
            guard let object = HistoryNode.object(named: name, mapping.model),
                let kind = HistoryChange.Kind(rawValue: Int64(node.property))
            else { throw .notFound }
            let entry = try mapping.historyTransaction(node.key.rawValue)
            guard
                let change = entry.byObject[object]?.lazy.map({ entry.transaction.changes[$0] })
                    .first(where: { $0.kind == kind && Self.isShown($0, mapping) })
            else { throw .notFound }
            return kind == .delete ? HistoryNode.tombstone(change.changeID) : HistoryNode.link(change.changeID)
        case .tombstone?:
            let (_, change) = try change(node, mapping)
            let attributes = mapping.model[change.objectID.entity].allAttributes
            guard change.kind == .delete, let index = attributes.firstIndex(where: { $0.name == name }),
                index < Node.maximumHistoryAttributes, case .some(.some) = change.tombstone[name]
            else { throw .notFound }
            return HistoryNode.value(change.changeID, index)
        default:
            throw .notDirectory
        }
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        switch node.historyPart {
        case .folder?:
            return .names(
                try mapping.historyListing().map {
                    (HistoryNode.name(of: $0.number), HistoryNode.transaction($0.number))
                })
        case .transaction?:
            let number = node.key.rawValue
            var names: [(String, Node)] = []
            for (index, name) in HistoryNode.fields.enumerated() {
                let field = HistoryNode.field(number, index)
                if (try? Self.content(of: field, mapping)) != nil { names.append((name, field)) }
            }
            for (raw, name) in HistoryNode.changeFolders.enumerated() {
                if let kind = HistoryChange.Kind(rawValue: Int64(raw)) {
                    names.append((name, HistoryNode.changes(number, kind)))
                }
            }
            return .names(names)
        case .changes?:
            let entry = try mapping.historyTransaction(node.key.rawValue)
            var seen: Set<String> = []
            var names: [(String, Node)] = []
            for change in entry.transaction.changes
            where change.kind.rawValue == node.property && Self.isShown(change, mapping) {
                let name = HistoryNode.name(of: change.objectID, mapping.model)
                guard seen.insert(name).inserted else { continue }
                names.append(
                    (
                        name,
                        change.kind == .delete
                            ? HistoryNode.tombstone(change.changeID) : HistoryNode.link(change.changeID)
                    ))
            }
            return .names(names)
        case .tombstone?:
            let (_, change) = try change(node, mapping)
            let attributes = mapping.model[change.objectID.entity].allAttributes
            return .names(
                attributes.enumerated().filter { index, attribute in
                    guard index < Node.maximumHistoryAttributes, case .some(.some) = change.tombstone[attribute.name]
                    else {
                        return false
                    }
                    return true
                }.map { ($0.element.name, HistoryNode.value(change.changeID, $0.offset)) })
        default:
            throw .notDirectory
        }
    }

    // MARK: - Links and files

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        guard node.historyPart == .link else { throw .invalid }
        let (_, change) = try change(node, mapping)
        guard change.kind != .delete else { throw .notFound }
        return try target(of: change, mapping)
    }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        guard node.historyPart == .field || node.historyPart == .value else { throw .isDirectory }
        if flags.isWriting { throw mapping.configuration.readOnly ? .readOnly : .notPermitted }
        return try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        try Self.content(of: node, mapping)
    }

    /// A field's or a tombstone value's text, as attribute files show values (one trailing
    /// newline); ENOENT where the transaction has no such name or the tombstone no such value.
    static func content(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        switch node.historyPart {
        case .field?:
            let transaction = try mapping.historyTransaction(node.key.rawValue).transaction
            let value: AttributeValue? =
                switch node.property {
                case 0: .date(transaction.timestamp)
                case 1: transaction.author.map(AttributeValue.string)
                case 2: transaction.bundleID.map(AttributeValue.string)
                case 3: transaction.processID.map(AttributeValue.string)
                case 4: transaction.contextName.map(AttributeValue.string)
                default: nil
                }
            guard let value else { throw .notFound }
            return ValueText.content(of: value, type: node.property == 0 ? .date : .string)
        case .value?:
            let (_, change) = try mapping.historyChange(node.key.rawValue)
            guard change.kind == .delete, isShown(change, mapping) else { throw .notFound }
            let attributes = mapping.model[change.objectID.entity].allAttributes
            guard node.property < attributes.count,
                case .some(.some(let value)) = change.tombstone[attributes[node.property].name]
            else { throw .notFound }
            return ValueText.content(of: value, type: attributes[node.property].type)
        default:
            throw .isDirectory
        }
    }

    // MARK: - Extended attributes

    /// An update's link: `user.history.changed`, the properties it changed, space-separated, in
    /// the order `storefs history` prints them (for FUSE clients; see below for the kernel).
    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        guard node.historyPart == .link else { return [:] }
        let (_, change) = try change(node, mapping)
        guard change.kind == .update else { return [:] }
        return [Self.changedName: Data(change.changedProperties.joined(separator: " ").utf8)]
    }

    static let changedName = "user.history.changed"

    /// The kernel answers no `user.` xattr of a symlink (ENODATA, whatever the filesystem says),
    /// so `updated/` says the same for each of its links: `user.history.changed.Entity-pK`.
    func extendedAttribute(_ name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Data {
        guard node.historyPart == .changes, node.property == Int(HistoryChange.Kind.update.rawValue),
            name.hasPrefix(Self.changedName + ".")
        else {
            guard let value = try extendedAttributes(of: node, in: mapping)[name] else { throw .noAttribute }
            return value
        }
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        guard let link = try? child(named: String(name.dropFirst(Self.changedName.count + 1)), of: node, in: mapping)
        else {
            throw .noAttribute
        }
        guard let value = try extendedAttributes(of: link, in: mapping)[Self.changedName] else { throw .noAttribute }
        return value
    }

    /// Most names `listxattr` can return (the kernel's XATTR_LIST_MAX is 64 KiB): a larger
    /// `updated/` lists none of its per-link names, which stay readable by name.
    static let listedNamesLimit = 60_000

    func extendedAttributeNames(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String] {
        let own = try extendedAttributes(of: node, in: mapping).keys.sorted()
        guard node.historyPart == .changes, node.property == Int(HistoryChange.Kind.update.rawValue),
            case .names(let links) = try listing(of: node, in: mapping, known: nil)
        else { return own }
        let names = links.map { Self.changedName + "." + $0.0 }
        return names.reduce(0) { $0 + $1.utf8.count + 1 } <= Self.listedNamesLimit ? own + names : own
    }

    // MARK: - Read-only

    func write(_ data: Data, at offset: UInt64, to node: Node, handle: FuseKit.FileHandle, in mapping: Mapping)
        throws(FileSystemError) -> Int
    { throw .notPermitted }

    func truncate(_ node: Node, to size: Int, handle: FuseKit.FileHandle?, in mapping: Mapping) throws(FileSystemError)
    {
        throw .notPermitted
    }

    func touch(_ node: Node, in mapping: Mapping) throws(FileSystemError) {
        _ = try attributes(of: node, in: mapping, known: nil, listed: false)
        throw mapping.configuration.readOnly ? .readOnly : .notPermitted
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("rm \(HistoryNode.folderName)/…/\(name): the persistent history is read-only")
        throw .notPermitted
    }

    func removeFolder(_ node: Node, named name: String, from folder: Node, in mapping: Mapping) throws(FileSystemError)
    {
        mapping.logger.error("rmdir \(HistoryNode.folderName)/…/\(name): the persistent history is read-only")
        throw .notPermitted
    }

    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) {}
}
