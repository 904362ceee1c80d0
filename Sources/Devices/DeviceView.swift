import Foundation
import ObjectGraph

/// A device tree as a folder mount and `storefs find` show it: each Core Data store found by
/// content is a store (its `-wal`, `-shm` and `-journal` go with it and are not shown on their
/// own), storefs's own lock files (`.NAME.storefs-lock`) are not shown, and everything else is
/// shown as it is.
///
/// Threading: immutable; safe from any thread.
public final class DeviceView: Sendable {
    public let tree: any DeviceTree
    public let recognizer: StoreRecognizer

    /// What an item is shown as.
    public enum Shown: Sendable {
        case folder
        case file
        case link
        case store(any PersistentStoreType)
    }

    /// Files that belong to the store of the same name without the suffix.
    public static let companionSuffixes = ["-wal", "-shm", "-journal"]

    public init(tree: any DeviceTree, types: [any PersistentStoreType]) {
        self.tree = tree
        recognizer = StoreRecognizer(types: types)
    }

    /// Whether name `name` in folder `folder` is not shown: a lock file of storefs's, or a file
    /// of the store beside it.
    public func isHidden(_ name: String, in folder: String) -> Bool {
        if name.hasPrefix("."), name.hasSuffix(".storefs-lock") { return true }
        for suffix in Self.companionSuffixes where name.hasSuffix(suffix) && name.count > suffix.count {
            let base = String(name.dropLast(suffix.count))
            return recognizer.storeType(at: DevicePath.join(folder, base), in: tree) != nil
        }
        return false
    }

    /// What `item` is shown as (its -wal found beside it when it is a file).
    public func shown(_ item: DeviceItem) -> Shown {
        switch item.kind {
        case .folder: return .folder
        case .link: return .link
        case .file:
            guard let type = recognizer.storeType(at: item.path, in: tree) else { return .file }
            return .store(type)
        }
    }

    /// A store found by ``stores(under:visit:)``.
    public struct FoundStore: Sendable {
        public var path: String
        public var type: any PersistentStoreType
        public var item: DeviceItem
    }

    /// Walks the tree from folder `path`, depth first in name order, and hands every store to
    /// `visit` (false stops the walk). Folders deeper than ``DevicePath/maximumDepth`` and links
    /// are not entered; a folder that cannot be listed is reported to `problem` and skipped.
    public func stores(
        under path: String = "", problem: (String) -> Void = { _ in }, visit: (FoundStore) -> Bool
    ) {
        var stack: [(folder: String, depth: Int)] = [(path, DevicePath.components(path).count)]
        while let (folder, depth) = stack.popLast() {
            let names: [DeviceName]
            do {
                names = try tree.listing(of: folder)
            } catch {
                problem("\(folder.isEmpty ? "." : folder): \(error)")
                continue
            }
            var subfolders: [String] = []
            for name in names where !isHidden(name.name, in: folder) {
                let child = DevicePath.join(folder, name.name)
                var kind = name.kind
                if kind == nil { kind = (try? tree.item(at: child))?.kind }
                switch kind {
                case .folder?:
                    if depth + 1 < DevicePath.maximumDepth { subfolders.append(child) }
                case .file?:
                    guard let item = try? tree.item(at: child), case .store(let type) = shown(item) else { continue }
                    guard visit(FoundStore(path: child, type: type, item: item)) else { return }
                default:
                    continue
                }
            }
            for subfolder in subfolders.reversed() { stack.append((subfolder, depth + 1)) }
        }
    }
}
