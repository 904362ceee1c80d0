import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Files and links tools make under names that are not properties: an editor's temporary and
/// swap files, `sed -i`'s and Python's temporary files, `ln -sf`'s temporary link, the links a
/// copy makes before the objects they point at exist. They live in memory, never in the store.
///
/// Threading: one lock; never calls out while holding it.
final class ScratchFiles: Sendable {
    struct ScratchFile {
        var parent: Node
        var name: String
        var content: Data
        var modified: Date
        /// The target, when the scratch entry is a symlink.
        var linkTarget: String?
    }

    private struct State {
        var nextSerial: UInt64 = 1
        var files: [UInt64: ScratchFile] = [:]
        /// The scratch files of each folder by name: lookups in object folders must not scan every
        /// scratch file (a copy in progress holds thousands of waiting links).
        var byFolder: [Node: [String: UInt64]] = [:]
        /// What scratch entries renamed onto a property became, newest last. The kernel moves the
        /// entry's inode to the new name when rename(2) returns, and keeps it there until the
        /// invalidation storefs sends arrives: requests for that inode meanwhile are answered as
        /// the property's.
        var replacements: [UInt64: Node] = [:]
        var replacementOrder: [UInt64] = []
        /// Names links were made under that became a property or member shown under another
        /// name, until the next commit: `ln -sf` renames its temporary link next.
        var aliases: [Node: [String: Node]] = [:]
        var aliasCount = 0
    }

    /// How many replaced entries are remembered: enough for the invalidations in flight.
    private static let replacementLimit = 1024

    private let state = Mutex(State())

    func named(_ name: String, in parent: Node) -> UInt64? {
        state.withLock { $0.byFolder[parent]?[name] }
    }

    func list(in parent: Node) -> [(name: String, serial: UInt64)] {
        state.withLock { state in
            (state.byFolder[parent] ?? [:]).map { ($0.key, $0.value) }.sorted { $0.name < $1.name }
        }
    }

    func create(named name: String, in parent: Node, content: Data = Data(), linkTarget: String? = nil) -> UInt64 {
        state.withLock { state in
            let serial = state.nextSerial
            state.nextSerial += 1
            if let old = state.byFolder[parent]?[name] { state.files[old] = nil }
            state.files[serial] = ScratchFile(
                parent: parent, name: name, content: content, modified: Date(), linkTarget: linkTarget)
            state.byFolder[parent, default: [:]][name] = serial
            return serial
        }
    }

    func file(_ serial: UInt64) -> ScratchFile? { state.withLock { $0.files[serial] } }

    func setContent(_ serial: UInt64, _ content: Data) {
        state.withLock { state in
            state.files[serial]?.content = content
            state.files[serial]?.modified = Date()
        }
    }

    /// Writes `data` at `offset` into scratch file `serial` in place (a write costs what it writes,
    /// not a copy of the file). False when there is no such file or it is a link.
    func write(_ serial: UInt64, _ data: Data, at offset: Int) -> Bool {
        state.withLock { state in
            guard var file = state.files[serial], file.linkTarget == nil else { return false }
            var content = file.content
            file.content = Data()
            state.files[serial]?.content = Data()
            Mapping.splice(data, into: &content, at: offset)
            file.content = content
            file.modified = Date()
            state.files[serial] = file
            return true
        }
    }

    func rename(_ serial: UInt64, to name: String, in parent: Node) {
        state.withLock { state in
            guard let old = state.files[serial] else { return }
            state.byFolder[old.parent]?[old.name] = nil
            if let replaced = state.byFolder[parent]?[name] { state.files[replaced] = nil }
            state.files[serial]?.name = name
            state.files[serial]?.parent = parent
            state.byFolder[parent, default: [:]][name] = serial
        }
    }

    /// Removes scratch entry `serial`, which became `node`: a rename made it that property, or
    /// it was a link a copy put in a fetched folder that now computes that member.
    func consume(_ serial: UInt64, becoming node: Node) {
        state.withLock { state in
            guard Self.take(serial, &state) != nil else { return }
            state.replacements[serial] = node
            state.replacementOrder.append(serial)
            if state.replacementOrder.count > Self.replacementLimit {
                let dropped = state.replacementOrder.count - Self.replacementLimit
                for old in state.replacementOrder.prefix(dropped) { state.replacements[old] = nil }
                state.replacementOrder.removeFirst(dropped)
            }
        }
    }

    /// Remembers that a link made under `name` in `folder` became `node` (shown under its own
    /// name). At most ``replacementLimit`` are kept; they go at the next commit.
    func alias(_ name: String, in folder: Node, to node: Node) {
        state.withLock { state in
            guard state.aliasCount < Self.replacementLimit else { return }
            if state.aliases[folder, default: [:]].updateValue(node, forKey: name) == nil { state.aliasCount += 1 }
        }
    }

    func aliased(_ name: String, in folder: Node) -> Node? { state.withLock { $0.aliases[folder]?[name] } }

    func forgetAlias(_ name: String, in folder: Node) {
        state.withLock { state in
            if state.aliases[folder]?.removeValue(forKey: name) != nil { state.aliasCount -= 1 }
        }
    }

    /// Forgets every alias (at a commit); returns them, for the kernel to forget their names too.
    func takeAliases() -> [(folder: Node, name: String)] {
        state.withLock { state in
            defer {
                state.aliases = [:]
                state.aliasCount = 0
            }
            return state.aliases.flatMap { folder, names in names.keys.map { (folder, $0) } }
        }
    }

    /// What consumed scratch entry `serial` became, while it is remembered.
    func replacement(of serial: UInt64) -> Node? {
        state.withLock { $0.replacements[serial] }
    }

    @discardableResult
    func remove(_ serial: UInt64) -> ScratchFile? {
        state.withLock { Self.take(serial, &$0) }
    }

    /// Takes entry `serial` out of the files and out of its folder's names.
    private static func take(_ serial: UInt64, _ state: inout State) -> ScratchFile? {
        guard let removed = state.files.removeValue(forKey: serial) else { return nil }
        if state.byFolder[removed.parent]?[removed.name] == serial {
            state.byFolder[removed.parent]?[removed.name] = nil
        }
        return removed
    }

    /// The links a copy put in the fetched folders of `objects` (their folders compute their own
    /// once the copy is done, and these are then removed).
    func fetchedLinks(of objects: [ObjectID]) -> [(serial: UInt64, file: ScratchFile)] {
        let set = Set(objects)
        return state.withLock { state in
            state.files.compactMap { serial, file in
                guard file.parent.kind == .fetched, set.contains(file.parent.object) else { return nil }
                return (serial, file)
            }
        }
    }

    /// Removes the scratch files of an object's folder and of its to-many folders.
    func removeAll(of object: ObjectID) {
        state.withLock { state in
            for (serial, file) in state.files where file.parent.owner == object {
                state.files[serial] = nil
                state.byFolder[file.parent] = nil
            }
        }
    }
}
