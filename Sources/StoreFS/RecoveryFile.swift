import Foundation
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

/// Changes a mount acknowledged and could not save, kept in a JSON file beside the store at
/// unmount (`Company.sqlite.storefs-recovery-20261123-101500.json`) so that nothing acknowledged is
/// lost: readable as it is, and applied again with `storefs recover STORE FILE` once what it
/// names is fixed (docs/SEMANTICS.md describes the format).
///
/// Values are in the text forms the mount shows (binary values in base64, and a value the store
/// keeps in a file, ``FileBackedValue``, as that file, linked into a folder beside the recovery
/// file: `….storefs-recovery-DATE.values/NAME`); objects are named `Entity/pN`, as folders are.
public struct RecoveryFile: Codable, Sendable {
    /// One object's change.
    public struct Change: Codable, Sendable {
        /// `Entity/pN`.
        public var object: String
        /// `inserted`, `updated` or `deleted`.
        public var change: String
        /// Why it was not saved.
        public var reason: String?
        /// New values: text, or `{"base64": …}` for binary values; null sets nil.
        public var attributes: [String: Value?]
        /// To-one relationships: `Entity/pN`, or null to clear.
        public var toOne: [String: String?]
        /// To-many relationships' new contents.
        public var toMany: [String: [String]]

        /// `fileOf`: where a value kept in a file is now (``FileBackedValueStore/currentFile(of:)``).
        init(_ pending: PendingChange, model: ManagedObjectModel, fileOf: (FileBackedValue) -> String? = { _ in nil }) {
            object = Self.name(pending.objectID, model)
            change = pending.kind.rawValue
            reason = pending.failure?.message
            attributes = pending.attributes.mapValues { value in
                value.map { value in
                    // Its reference means nothing to another process: the file's bytes are kept.
                    if let kept = FileBackedValue(value), let path = fileOf(kept) { return Value(file: path) }
                    return Value(value)
                }
            }
            toOne = pending.toOne.mapValues { id in id.map { Self.name($0, model) } }
            toMany = pending.toMany.mapValues { list in list.map { Self.name($0, model) } }
        }

        package static func name(_ id: ObjectID, _ model: ManagedObjectModel) -> String {
            guard id.entity.rawValue >= 1, id.entity.rawValue <= model.entities.count else { return id.description }
            return "\(model[id.entity].name)/\(id.key)"
        }
    }

    /// An attribute value: its text, or its bytes in base64 for binary attributes, or the path of
    /// a file holding its bytes (a value the store kept in a file, too large for the JSON).
    public struct Value: Codable, Sendable, Equatable {
        public var text: String?
        public var base64: String?
        public var file: String?

        init(file: String) { self.file = file }

        package init(_ value: AttributeValue) {
            if case .data(let bytes) = value {
                base64 = bytes.base64EncodedString()
            } else {
                text = ValueText.text(of: value)
            }
        }

        package func content(for type: AttributeType) -> Data? {
            if let base64 { return Data(base64Encoded: base64) }
            guard let text else { return nil }
            return Data((ValueText.isText(type) ? text + "\n" : text).utf8)
        }
    }

    /// A link a copy made to an object that never appeared.
    public struct WaitingLink: Codable, Sendable {
        /// The folder the link was made in (`Employee/p26/projects`).
        public var folder: String
        public var name: String
        public var target: String
    }

    public var storefs = "recovery"
    public var version = 1
    public var store: String
    public var storeUUID: String
    public var written: String
    public var changes: [Change]
    public var waitingLinks: [WaitingLink]
    /// Custom metadata keys that were set (a value) or removed (null).
    public var metadata: [String: String?]

    init(store: String, storeUUID: String, changes: [Change], waitingLinks: [WaitingLink], metadata: [String: String?])
    {
        self.store = store
        self.storeUUID = storeUUID
        self.written = ValueText.format(Date())
        self.changes = changes
        self.waitingLinks = waitingLinks
        self.metadata = metadata
    }

    /// The reasons, briefly: the first few distinct ones.
    var summary: String {
        var seen: [String] = []
        for reason in changes.compactMap(\.reason) where !seen.contains(reason) { seen.append(reason) }
        if !waitingLinks.isEmpty { seen.append("\(waitingLinks.count) links to objects that were never made") }
        if !metadata.isEmpty { seen.append("metadata changes") }
        return seen.prefix(3).joined(separator: "; ") + (seen.count > 3 ? "; …" : "")
    }

    /// The custom metadata keys `pending` changes against `stored`, as text.
    static func metadataChanges(_ pending: StoreMetadata, from stored: StoreMetadata?) -> [String: String?] {
        var result: [String: String?] = [:]
        let old = stored?.values ?? [:]
        for (key, value) in pending.values where old[key] != value && !StoreMetadata.managedKeys.contains(key) {
            result[key] = String(decoding: MetadataBytes.data(of: value), as: UTF8.self)
        }
        for key in old.keys where pending.values[key] == nil { result[key] = .some(nil) }
        return result
    }

    /// Writes the file beside the store (or in the temporary folder when that folder cannot be
    /// written, or for an in-memory store); returns where, and the file as written. Values kept in
    /// files are linked into the folder `NAME.values` beside it first (``keepValueFiles(in:)``).
    func write(besideStore store: URL?) throws -> (url: URL, written: RecoveryFile) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let stamp = written.prefix(19).replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
            .replacingOccurrences(of: "T", with: "-")
        let name = "\(store?.lastPathComponent ?? "memory").storefs-recovery-\(stamp).json"
        var candidates: [URL] = []
        if let store { candidates.append(store.deletingLastPathComponent().appendingPathComponent(name)) }
        candidates.append(FileManager.default.temporaryDirectory.appendingPathComponent(name))
        var lastError: (any Error)?
        for url in candidates {
            do {
                let kept = try keepValueFiles(in: url.deletingPathExtension().appendingPathExtension("values"))
                // Never over another recovery file: created new, or not at all; and on the disk,
                // name included, before the unmount says where it is.
                try DurableFile.create(try encoder.encode(kept), at: url)
                return (url, kept)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CocoaError(.fileWriteUnknown)
    }

    /// This file with each value kept in a file linked into `folder` (made for it, only when there
    /// are such values) and named there: a hard link, so no byte is copied and the value outlives
    /// the temporary file it was written into (which the store may remove). A value whose file
    /// cannot be linked there (another file system) is named where it is. Files and folder are
    /// synced; the folder's entry is synced with the recovery file's.
    private func keepValueFiles(in folder: URL) throws -> RecoveryFile {
        var kept = self
        var made = false
        for c in kept.changes.indices {
            for (name, value) in kept.changes[c].attributes {
                guard let path = value?.file else { continue }
                if !made {
                    guard mkdir(folder.path, 0o700) == 0 else {
                        throw ObjectGraphError.writing("cannot make \(folder.path)", errno: errno)
                    }
                    made = true
                }
                let link = folder.appendingPathComponent("\(c)-\(name)").path
                var place = path
                if Glibc.link(path, link) == 0 { place = link }
                let fd = open(place, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw ObjectGraphError.writing("cannot open \(place)", errno: errno) }
                let synced = fsync(fd)
                let error = errno
                close(fd)
                guard synced == 0 else { throw ObjectGraphError.writing("syncing \(place)", errno: error) }
                kept.changes[c].attributes[name] = .some(Value(file: place))
            }
        }
        if made { DurableFile.syncFolder(folder) }
        return kept
    }

    /// The paths of the files holding values kept in files, as this file names them.
    var valueFiles: [String] { changes.flatMap { $0.attributes.values.compactMap { $0?.file } } }

    /// Reads a recovery file.
    public static func read(_ url: URL) throws -> RecoveryFile {
        let data = try RegularFile.read(url, as: "recovery files")
        let file = try JSONDecoder().decode(RecoveryFile.self, from: data)
        guard file.storefs == "recovery", file.version == 1 else {
            throw ObjectGraphError(
                .unsupported, "\(url.path) is not a storefs recovery file of a version this storefs reads")
        }
        return file
    }

    /// What applying a recovery file did.
    public struct Outcome: Sendable {
        /// Changes the store now holds.
        public var applied: [String] = []
        /// Changes that could not be applied, with why.
        public var failed: [(change: String, reason: String)] = []
    }

    /// Applies the file's changes to a context and saves every change that can be saved; what
    /// cannot is reported (and stays unsaved in the context).
    public func apply(to context: ObjectContext) -> Outcome {
        var outcome = Outcome()
        let model = context.model
        func object(_ name: String) -> ObjectID? {
            let parts = name.split(separator: "/")
            guard parts.count == 2, let entity = model.entityID(named: String(parts[0])),
                let key = PrimaryKey(reference: parts[1])
            else { return nil }
            return (try? context.objectID(forKey: key, in: entity)) ?? ObjectID(entity: entity, key: key)
        }
        var touched: [String: ObjectID] = [:]
        // Objects first (inserts), then values and relationships, so links can name new objects.
        for change in changes where change.change == PendingChange.Kind.inserted.rawValue {
            let parts = change.object.split(separator: "/")
            guard parts.count == 2, let entity = model.entityID(named: String(parts[0])),
                let key = PrimaryKey(reference: parts[1])
            else {
                outcome.failed.append((change.object, "not an object name (Entity/pN)"))
                continue
            }
            do throws(ObjectGraphError) {
                touched[change.object] = try context.insertObject(of: entity, key: key)
            } catch {
                outcome.failed.append((change.object, error.message))
            }
        }
        for change in changes {
            guard let id = touched[change.object] ?? (change.change == "inserted" ? nil : object(change.object)) else {
                continue
            }
            do throws(ObjectGraphError) {
                if change.change == PendingChange.Kind.deleted.rawValue {
                    try context.delete(id)
                    touched[change.object] = id
                    continue
                }
                for (name, value) in change.attributes.sorted(by: { $0.key < $1.key }) {
                    guard let attribute = model[id.entity].attribute(named: name) else {
                        throw ObjectGraphError(.notFound, "\(model[id.entity].name) has no attribute \(name)")
                    }
                    guard let value else {
                        try context.setValue(nil, of: name, for: id)
                        continue
                    }
                    if let path = value.file {
                        try context.setValue(try Self.valueKept(in: path, for: attribute, context), of: name, for: id)
                        continue
                    }
                    guard let content = value.content(for: attribute.type) else {
                        throw ObjectGraphError(.validation, "\(name): the value is neither text nor base64")
                    }
                    let parsed: AttributeValue
                    do throws(ValueTextError) {
                        parsed = try ValueText.value(from: content, type: attribute.type)
                    } catch {
                        throw ObjectGraphError(.validation, "\(name): \(error.message)")
                    }
                    try context.setValue(parsed, of: name, for: id)
                }
                for (name, destination) in change.toOne.sorted(by: { $0.key < $1.key }) {
                    try context.setDestination(destination.flatMap(object), of: name, for: id)
                }
                for (name, list) in change.toMany.sorted(by: { $0.key < $1.key }) {
                    try context.setDestinations(list.compactMap(object), of: name, for: id)
                }
                touched[change.object] = id
            } catch {
                outcome.failed.append((change.object, error.message))
                touched[change.object] = nil
            }
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            do throws(ObjectGraphError) {
                let current = try context.metadata()[key]
                try context.setMetadata(value.map { MetadataBytes.value(from: Data($0.utf8), like: current) }, for: key)
            } catch {
                outcome.failed.append(("metadata \(key)", error.message))
            }
        }
        for link in waitingLinks {
            outcome.failed.append(
                (
                    "\(link.folder)/\(link.name)",
                    "a link to \(link.target), an object that was never made: make it with ln -s"
                ))
        }
        let saved = context.save(holding: [])
        for (name, id) in touched.sorted(by: { $0.key < $1.key }) {
            if let error = saved.failed[id] ?? saved.conflicts.first(where: { $0.objectID == id })?.failure {
                outcome.failed.append((name, error.message))
            } else if let error = saved.storeError {
                outcome.failed.append((name, error.message))
            } else {
                outcome.applied.append(name)
            }
        }
        return outcome
    }

    /// A value the unmount kept in a file (`path`): written into a new file of the store, when the
    /// store keeps this attribute's values in files (never held in memory), else read (mapped).
    private static func valueKept(in path: String, for attribute: AttributeDescription, _ context: ObjectContext)
        throws(ObjectGraphError) -> AttributeValue
    {
        let source = open(path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw ObjectGraphError.writing("cannot open \(path)", errno: errno) }
        defer { close(source) }
        guard let store = context.coordinator.store as? any FileBackedValueStore, !store.isReadOnly,
            store.fileThreshold(for: attribute) != nil
        else {
            do {
                return .data(try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped))
            } catch {
                throw ObjectGraphError(.io, "reading \(path): \(error)")
            }
        }
        let (writing, value) = try store.newValueFile(for: attribute)
        let target = open(writing, O_WRONLY | O_CLOEXEC)
        guard target >= 0 else {
            let error = errno
            store.discardValueFile(value)
            throw ObjectGraphError.writing("cannot open \(writing)", errno: error)
        }
        do {
            try ValueFile(descriptor: target, value: nil).copy(from: source)
        } catch {
            store.discardValueFile(value)
            throw ObjectGraphError(.io, "copying \(path) into \(writing): \(error)")
        }
        return .data(value.reference)
    }
}
