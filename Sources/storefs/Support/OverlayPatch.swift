import Foundation
import ObjectGraph
import StoreFS

/// The changes of an evidence mount's overlay as a file: `storefs overlay export MNT >
/// changes.json` writes it, `storefs apply changes.json COPY` replays it on a copy of the store
/// (docs/SEMANTICS.md describes it).
///
/// It is an ``OverlayStore``'s ``OverlayStore/changes()`` in words a reader can check: objects
/// named `Entity/pN` as folders are, values in the text forms the mount shows (binary values in
/// base64, as recovery files have them), and for each change what the store held before it
/// (`from`), so that a replay on a store that differs there is refused as a conflict instead of
/// writing over it. It carries the store's UUID and the files the overlay's store was read from,
/// with their SHA-256, so a patch says which evidence it was made on.
///
/// Threading: a value; share it freely.
public struct OverlayPatch: Codable, Sendable {
    /// An attribute's or a to-one's change: the value now and, for an update, the value before.
    public struct Change<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
        /// Null: nil.
        public var to: Value?
        /// Null: it was nil; absent for an inserted object.
        public var from: Value??

        public init(to: Value?, from: Value??) {
            self.to = to
            self.from = from
        }

        // `from` absent and `from: null` say different things; Codable's synthesized form
        // would write both as absent.
        enum CodingKeys: String, CodingKey { case to, from }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            to = try container.decodeIfPresent(Value.self, forKey: .to)
            if container.contains(.from) {
                from = .some(try container.decodeIfPresent(Value.self, forKey: .from))
            } else {
                from = .none
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(to, forKey: .to)
            if case .some(let before) = from { try container.encode(before, forKey: .from) }
        }
    }

    /// One object's change.
    public struct Object: Codable, Sendable {
        /// `Entity/pN`.
        public var object: String
        /// `inserted`, `updated` or `deleted`.
        public var change: String
        /// The version (`Z_OPT`) the store had when the overlay read it (updates and deletes).
        public var version: Int64?
        public var attributes: [String: Change<RecoveryFile.Value>] = [:]
        /// To-one relationships: `Entity/pN`.
        public var toOne: [String: Change<String>] = [:]
    }

    /// A to-many relationship whose contents changed: all of them now, and before.
    public struct List: Codable, Sendable {
        /// `Entity/pN`.
        public var object: String
        public var relationship: String
        public var to: [String]
        public var from: [String]
    }

    /// A change that is in the mount but not in the overlay: the model refused it.
    public struct Unsaved: Codable, Sendable {
        public var object: String
        public var reason: String
    }

    public var storefs = "patch"
    public var version = 1
    /// The store the overlay was opened on, and its UUID.
    public var store: String
    public var storeUUID: String
    /// The files the store was read from, with their SHA-256 (``InputFile``).
    public var read: [InputFile]
    public var written: String
    public var objects: [Object]
    public var toMany: [List]
    /// Custom metadata keys set (their value, in ``MetadataText``'s form) or removed (null).
    public var metadata: [String: MetadataText?]
    /// Changes the mount holds that could not be saved into the overlay (nothing, normally).
    public var unsaved: [Unsaved]

    /// The patch of `changes` (an ``OverlayStore/changes()``) against a store with `metadata`.
    public init(
        _ changes: SaveRequest, model: ManagedObjectModel, store: String, metadata: StoreMetadata, read: [InputFile],
        unsaved: [(ObjectID, String)] = []
    ) {
        func name(_ id: ObjectID) -> String { RecoveryFile.Change.name(id, model) }
        func value(_ value: AttributeValue?) -> RecoveryFile.Value? { value.map(RecoveryFile.Value.init) }
        self.store = store
        self.storeUUID = metadata.storeUUID ?? ""
        self.read = read
        self.written = ISO8601DateText.text(of: Date())
        var objects: [Object] = []
        for snapshot in changes.inserted {
            var object = Object(object: name(snapshot.objectID), change: PendingChange.Kind.inserted.rawValue)
            for (key, v) in snapshot.attributes { object.attributes[key] = Change(to: value(v), from: .none) }
            for (key, id) in snapshot.toOne { object.toOne[key] = Change(to: name(id), from: .none) }
            objects.append(object)
        }
        for update in changes.updated {
            var object = Object(
                object: name(update.objectID), change: PendingChange.Kind.updated.rawValue,
                version: update.original.version)
            for key in update.changedAttributes {
                object.attributes[key] = Change(
                    to: value(update.snapshot.attributes[key]), from: .some(value(update.original.attributes[key])))
            }
            for key in update.changedToOne {
                object.toOne[key] = Change(
                    to: update.snapshot.toOne[key].map(name), from: .some(update.original.toOne[key].map(name)))
            }
            objects.append(object)
        }
        for deletion in changes.deleted {
            objects.append(
                Object(
                    object: name(deletion.objectID), change: PendingChange.Kind.deleted.rawValue,
                    version: deletion.expectedVersion))
        }
        self.objects = objects
        toMany = changes.toManyChanges.map { change in
            List(
                object: name(change.source), relationship: change.relationship, to: change.destinations.map(name),
                from: change.original.map(name))
        }
        var keys: [String: MetadataText?] = [:]
        if let new = changes.metadata {
            for (key, v) in new.values where metadata[key] != v && !StoreMetadata.managedKeys.contains(key) {
                keys[key] = MetadataText(v)
            }
            for key in metadata.values.keys where new[key] == nil && !StoreMetadata.managedKeys.contains(key) {
                keys[key] = .some(nil)
            }
        }
        self.metadata = keys
        self.unsaved = unsaved.map { Unsaved(object: name($0.0), reason: $0.1) }
    }

    public var isEmpty: Bool { objects.isEmpty && toMany.isEmpty && metadata.isEmpty }

    /// `3 inserted, 2 updated, 1 deleted objects, 4 to-many lists, 1 metadata key`.
    public var summary: String {
        func count(_ kind: PendingChange.Kind) -> Int { objects.count { $0.change == kind.rawValue } }
        return "\(count(.inserted)) inserted, \(count(.updated)) updated, \(count(.deleted)) deleted objects, "
            + "\(toMany.count) to-many lists, \(metadata.count) metadata keys"
    }

    // MARK: - Reading and replaying

    public static func read(_ url: URL) throws -> OverlayPatch {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        // A FIFO or /dev/zero named as a patch is refused, never read forever (RegularFile).
        let patch = try decoder.decode(OverlayPatch.self, from: try RegularFile.read(url, as: "patches"))
        guard patch.storefs == "patch", patch.version == 1 else {
            throw ObjectGraphError(.unsupported, "\(url.path) is not a storefs patch of a version this storefs reads")
        }
        return patch
    }

    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        var data = try encoder.encode(self)
        data.append(0x0A)
        return data
    }

    /// The save that replays the patch on a store of `model` whose metadata is `current`: what
    /// the overlay changed, with what the store held before as the originals, so that the store
    /// refuses the whole save as a conflict where it holds something else.
    ///
    /// A patch is a file anyone can edit: it is refused where a mount would have refused what it
    /// says (the mapping's ``ChangeRules``: the store's own metadata, keys a mount cannot show;
    /// the engine's ``ChangeValidation``: abstract entities, values and relationships the model
    /// does not allow).
    ///
    /// - Throws: ``ObjectGraphError/Code/notFound``, ``ObjectGraphError/Code/validation`` or
    ///   ``ObjectGraphError/Code/notPermitted`` naming the entry of the patch that does not fit
    ///   the model or that a mount refuses (nothing is applied then).
    public func request(for model: ManagedObjectModel, metadata current: StoreMetadata) throws(ObjectGraphError)
        -> SaveRequest
    {
        func object(_ name: String) throws(ObjectGraphError) -> ObjectID {
            let parts = name.split(separator: "/")
            guard parts.count == 2, let entity = model.entityID(named: String(parts[0])),
                let key = PrimaryKey(reference: parts[1])
            else {
                throw ObjectGraphError(.notFound, "\(name): not an object of this store's model (Entity/pN)")
            }
            return ObjectID(entity: entity, key: key)
        }
        func value(_ text: RecoveryFile.Value?, _ attribute: AttributeDescription, of name: String)
            throws(ObjectGraphError) -> AttributeValue?
        {
            guard let text else { return nil }
            guard let content = text.content(for: attribute.type) else {
                throw ObjectGraphError(.validation, "\(name).\(attribute.name): the value is neither text nor base64")
            }
            do throws(ValueTextError) {
                return try ValueText.value(from: content, type: attribute.type)
            } catch {
                throw ObjectGraphError(.validation, "\(name).\(attribute.name): \(error.message)")
            }
        }
        var request = SaveRequest()
        // The new contents of to-many relationships, by object and name: their counts are checked.
        var lists: [ObjectID: [String: Int]] = [:]
        for list in toMany {
            lists[try object(list.object), default: [:]][list.relationship] = list.to.count
        }
        for entry in objects {
            let id = try object(entry.object)
            let entity = model[id.entity]
            let inserted = entry.change == PendingChange.Kind.inserted.rawValue
            if inserted {
                if let refusal = ChangeRules.keyRefusal(id.key) {
                    throw ObjectGraphError(.validation, "\(entry.object): \(refusal)")
                }
                try ChangeValidation.checkInsert(of: entity)
            }
            var now = Snapshot(objectID: id, version: entry.version ?? 1)
            var before = now
            for (key, change) in entry.attributes.sorted(by: { $0.key < $1.key }) {
                guard let attribute = entity.attribute(named: key) else {
                    throw ObjectGraphError(.notFound, "\(entry.object): \(entity.name) has no attribute \(key)")
                }
                now.attributes[key] = try value(change.to, attribute, of: entry.object)
                if case .some(let old) = change.from {
                    before.attributes[key] = try value(old, attribute, of: entry.object)
                }
            }
            for (key, change) in entry.toOne.sorted(by: { $0.key < $1.key }) {
                guard entity.allRelationships.contains(where: { $0.name == key && !$0.isToMany }) else {
                    throw ObjectGraphError(
                        .notFound, "\(entry.object): \(entity.name) has no to-one relationship \(key)")
                }
                now.toOne[key] = try change.to.map(object)
                if case .some(let old) = change.from { before.toOne[key] = try old.map(object) }
            }
            if entry.change != PendingChange.Kind.deleted.rawValue {
                // What the entry sets must fit the model, as a mount's save checks it; what it does
                // not set is the store's, and not the patch's to answer for.
                _ = try ChangeValidation.checkAttributes(
                    of: now, changed: inserted ? nil : Set(entry.attributes.keys), in: entity, object: entry.object)
                for relationship in entity.persistentRelationships {
                    let count: Int?
                    if relationship.isToMany {
                        count = lists[id]?[relationship.name] ?? (inserted ? 0 : nil)
                    } else {
                        count =
                            inserted || entry.toOne[relationship.name] != nil
                            ? (now.toOne[relationship.name] == nil ? 0 : 1) : nil
                    }
                    guard let count else { continue }
                    _ = try ChangeValidation.checkRelationship(
                        relationship, count: count, changed: true, of: id, object: entry.object)
                }
            }
            switch entry.change {
            case PendingChange.Kind.inserted.rawValue: request.inserted.append(now)
            case PendingChange.Kind.updated.rawValue:
                request.updated.append(SaveRequest.Update(snapshot: now, original: before))
            case PendingChange.Kind.deleted.rawValue:
                request.deleted.append(SaveRequest.Deletion(objectID: id, expectedVersion: entry.version ?? 1))
            default: throw ObjectGraphError(.validation, "\(entry.object): unknown change \(entry.change)")
            }
        }
        for list in toMany {
            let source = try object(list.object)
            guard model[source.entity].allRelationships.contains(where: { $0.name == list.relationship && $0.isToMany })
            else {
                throw ObjectGraphError(
                    .notFound,
                    "\(list.object): \(model[source.entity].name) has no to-many relationship \(list.relationship)")
            }
            var to: [ObjectID] = []
            for name in list.to { to.append(try object(name)) }
            var from: [ObjectID] = []
            for name in list.from { from.append(try object(name)) }
            request.toManyChanges.append(
                SaveRequest.ToManyChange(
                    source: source, relationship: list.relationship, destinations: to, original: from))
        }
        if !metadata.isEmpty {
            var next = current
            for (key, text) in metadata.sorted(by: { $0.key < $1.key }) {
                if let refusal = ChangeRules.metadataRefusal(key) { throw ObjectGraphError(.notPermitted, refusal) }
                next[key] = try text.map { (text) throws(ObjectGraphError) in try text.value(key: key) }
            }
            request.metadata = next
        }
        return request
    }
}

/// A metadata value in a patch: its type and its value as JSON can hold it exactly (dates as
/// seconds since 2001, Core Data's reference date; data in base64).
public enum MetadataText: Codable, Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Double)
    case data(String)
    case array([MetadataText])
    case dictionary([String: MetadataText])

    // One key naming the type, its value the value: `{"integer": 3}`, `{"date": 786000000.5}`.
    enum CodingKeys: String, CodingKey { case string, integer, real, boolean, date, data, array, dictionary }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "a metadata value is one of string, integer, real, boolean, date, data, array, dictionary"))
        }
        switch key {
        case .string: self = .string(try container.decode(String.self, forKey: key))
        case .integer: self = .integer(try container.decode(Int64.self, forKey: key))
        case .real: self = .real(try container.decode(Double.self, forKey: key))
        case .boolean: self = .boolean(try container.decode(Bool.self, forKey: key))
        case .date: self = .date(try container.decode(Double.self, forKey: key))
        case .data: self = .data(try container.decode(String.self, forKey: key))
        case .array: self = .array(try container.decode([MetadataText].self, forKey: key))
        case .dictionary: self = .dictionary(try container.decode([String: MetadataText].self, forKey: key))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .string(let v): try container.encode(v, forKey: .string)
        case .integer(let v): try container.encode(v, forKey: .integer)
        case .real(let v): try container.encode(v, forKey: .real)
        case .boolean(let v): try container.encode(v, forKey: .boolean)
        case .date(let v): try container.encode(v, forKey: .date)
        case .data(let v): try container.encode(v, forKey: .data)
        case .array(let v): try container.encode(v, forKey: .array)
        case .dictionary(let v): try container.encode(v, forKey: .dictionary)
        }
    }

    init(_ value: MetadataValue) {
        switch value {
        case .string(let s): self = .string(s)
        case .integer(let i): self = .integer(i)
        case .real(let d): self = .real(d)
        case .boolean(let b): self = .boolean(b)
        case .date(let d): self = .date(d.timeIntervalSinceReferenceDate)
        case .data(let d): self = .data(d.base64EncodedString())
        case .array(let a): self = .array(a.map(MetadataText.init))
        case .dictionary(let d): self = .dictionary(d.mapValues(MetadataText.init))
        }
    }

    func value(key: String) throws(ObjectGraphError) -> MetadataValue {
        switch self {
        case .string(let s): return .string(s)
        case .integer(let i): return .integer(i)
        case .real(let d): return .real(d)
        case .boolean(let b): return .boolean(b)
        case .date(let d): return .date(Date(timeIntervalSinceReferenceDate: d))
        case .data(let text):
            guard let data = Data(base64Encoded: text) else {
                throw ObjectGraphError(.validation, "metadata \(key): data that is not base64")
            }
            return .data(data)
        case .array(let a):
            var values: [MetadataValue] = []
            for item in a { values.append(try item.value(key: key)) }
            return .array(values)
        case .dictionary(let d):
            var values: [String: MetadataValue] = [:]
            for (k, item) in d { values[k] = try item.value(key: key) }
            return .dictionary(values)
        }
    }
}
