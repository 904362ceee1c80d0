import Foundation
import AtomicStore
import ObjectGraph

/// Writes a graph as a Core Data XML store file.
///
/// Object ids: a Core Data XML file numbers objects `z<N>` uniquely per file, while storefs keys
/// are unique per root entity. When every key in the graph is distinct across roots (every file
/// Core Data wrote, and most storefs graphs) the id is `z<key>`, exactly as read. Otherwise each
/// root entity gets an offset (the sum of the maximum keys of the roots before it, in entity
/// order) and the id is `z<offset + key>`. Either way the metadata key ``keysKey`` records, per
/// root entity name, `[offset, highest key handed out]`, so that keys (and Z_MAX) read back
/// exactly; Core Data ignores unknown metadata keys.
enum XMLStoreWriter {
    /// Metadata key of storefs's key bookkeeping (kept out of ``XMLStore/metadata()``).
    static let keysKey = "StoreFSKeys"
    /// The XML store version Core Data has written since 2006.
    static let formatVersion = "134481920"

    /// The whole file for `graph`, in memory (``write(_:model:to:)`` is what a save uses).
    static func encode(_ graph: StoreGraph, model: ManagedObjectModel) throws(ObjectGraphError) -> Data {
        var data = Data()
        try write(graph, model: model) { (chunk) throws(ObjectGraphError) in data.append(contentsOf: chunk) }
        return data
    }

    /// How much text the writer gathers before handing it on: large enough that a write costs
    /// little per byte, small against a store's file (1.2 GB at a million objects).
    static let chunkSize = 4 << 20

    /// Writes the file for `graph` to `output` in pieces of about ``chunkSize`` bytes, in order,
    /// so that writing a store holds one piece of its text at a time, not the whole file.
    static func write(
        _ graph: StoreGraph, model: ManagedObjectModel,
        to output: (UnsafeRawBufferPointer) throws(ObjectGraphError) -> Void
    ) throws(ObjectGraphError) {
        // Per-root maxima and whether keys collide across roots.
        var maxByRoot: [EntityID: Int64] = [:]
        var seen: Set<Int64> = []
        var collide = false
        for (root, keys) in graph.keysByRoot {
            var m = graph.maxKey[root] ?? 0
            for key in keys.keys {
                m = max(m, key.rawValue)
                if !seen.insert(key.rawValue).inserted { collide = true }
            }
            maxByRoot[root] = m
        }
        for (root, m) in graph.maxKey { maxByRoot[root] = max(maxByRoot[root] ?? 0, m) }
        // Keys come from files (a store being migrated): every sum below is checked, and a graph
        // whose ids would not fit z<Int64> is refused instead of trapping.
        func tooLarge() -> ObjectGraphError {
            ObjectGraphError(
                .unsupported,
                "the keys of this graph are too large for one XML store: it numbers objects z<N> with N up to "
                    + "\(Int64.max) across all entities; keep it in an SQLite or binary store")
        }
        var offsets: [EntityID: Int64] = [:]
        var running: Int64 = 0
        var nextObjectID: Int64 = 0
        for root in model.rootEntities.map(\.id) {
            let offset = collide ? running : 0
            offsets[root] = offset
            // The highest id of this root; every id of it is at most that (keys <= its maximum).
            let (top, overflow) = offset.addingReportingOverflow(maxByRoot[root] ?? 0)
            guard !overflow else { throw tooLarge() }
            let (sum, runningOverflow) = running.addingReportingOverflow(maxByRoot[root] ?? 0)
            running = runningOverflow ? Int64.max : sum
            nextObjectID = max(nextObjectID, top)
        }
        for id in graph.snapshots.keys where id.key.rawValue < 1 {
            throw ObjectGraphError(
                .unsupported,
                "object \(model[id.entity].name) \(id.key) has a key below 1, which an XML store cannot number")
        }

        var metadata = graph.metadata
        let uuid = metadata.storeUUID ?? StoreMetadata.newStoreUUID()
        metadata[StoreMetadata.storeTypeKey] = nil
        metadata[StoreMetadata.storeUUIDKey] = nil
        var keyTable: [String: MetadataValue] = [:]
        for root in model.rootEntities {
            keyTable[root.name] = .array([.integer(offsets[root.id] ?? 0), .integer(maxByRoot[root.id] ?? 0)])
        }
        metadata[keysKey] = .dictionary(keyTable)
        let plist = try plistText(metadata)

        var out = """
            <?xml version="1.0" standalone="yes"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

            <database>
                <databaseInfo>
                    <version>\(formatVersion)</version>
                    <UUID>\(XMLValueFormat.attributeEscape(uuid))</UUID>
                    <nextObjectID>\(nextObjectID)</nextObjectID>
                    <metadata>
            \(plist)
                    </metadata>
                </databaseInfo>

            """
        /// Below every offset + key, checked above (offset + highest key fits).
        func z(_ id: ObjectID) -> Int64 { (offsets[model[id.entity].rootID] ?? 0) &+ id.key.rawValue }

        // What every object of an entity writes the same way, escaped and cased once per entity
        // rather than once per object and property (a third of writing a large store).
        struct EntityTags {
            var open: String
            var attributes: [(name: String, type: AttributeType, open: String)]
            var relationships: [(name: String, isToMany: Bool, open: String)]
        }
        var tags: [EntityTags] = []
        for entity in model.entities {
            tags.append(
                EntityTags(
                    open: "    <object type=\"\(XMLValueFormat.attributeEscape(entity.name.uppercased()))\" id=\"z",
                    attributes: entity.persistentAttributes.map { attribute in
                        (
                            attribute.name, attribute.type,
                            "        <attribute name=\"\(XMLValueFormat.attributeEscape(attribute.name.lowercased()))\" type=\"\(XMLValueFormat.typeName(attribute.type))\">"
                        )
                    },
                    relationships: entity.persistentRelationships.map { relationship in
                        (
                            relationship.name, relationship.isToMany,
                            "        <relationship name=\"\(XMLValueFormat.attributeEscape(relationship.name.lowercased()))\" type=\"\(relationship.minCount)/\(relationship.maxCount)\" destination=\"\(XMLValueFormat.attributeEscape(relationship.destinationEntityName.uppercased()))\""
                        )
                    }))
        }

        let exists = graph.existence(model: model)
        var ordered = graph.snapshots.keys.map { (z: z($0), id: $0) }
        ordered.sort { $0.z < $1.z }
        func flush() throws(ObjectGraphError) {
            var failure: ObjectGraphError?
            out.withUTF8 { text in
                do throws(ObjectGraphError) { try output(UnsafeRawBufferPointer(text)) } catch { failure = error }
            }
            if let failure { throw failure }
            out.removeAll(keepingCapacity: true)
        }
        out.reserveCapacity(Self.chunkSize + (64 << 10))
        for (number, id) in ordered {
            if out.utf8.count >= Self.chunkSize { try flush() }
            guard let snapshot = graph.snapshots[id] else { continue }
            let entity = tags[id.entity.rawValue - 1]
            out += entity.open
            out += String(number)
            out += "\">\n"
            for attribute in entity.attributes {
                guard let value = snapshot.attributes[attribute.name] else { continue }
                out += attribute.open
                out += XMLValueFormat.text(of: value, as: attribute.type)
                out += "</attribute>\n"
            }
            for relationship in entity.relationships {
                out += relationship.open
                let destinations =
                    relationship.isToMany
                    ? graph.toMany[.init(source: id, relationship: relationship.name)] ?? []
                    : snapshot.toOne[relationship.name].map { [$0] } ?? []
                // A reference to an object that no longer exists would make the file unreadable.
                var written = 0
                for destination in destinations where exists(destination) {
                    out += written == 0 ? " idrefs=\"z" : " z"
                    out += String(z(destination))
                    written += 1
                }
                out += written == 0 ? "></relationship>\n" : "\"></relationship>\n"
            }
            out += "    </object>\n"
        }
        out += "</database>\n"
        try flush()
    }

    /// The metadata as an inline XML plist (`<plist version="1.0">…</plist>`).
    static func plistText(_ metadata: StoreMetadata) throws(ObjectGraphError) -> String {
        let object = metadata.values.mapValues(\.propertyList)
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
        } catch {
            throw ObjectGraphError(.unsupported, "the store metadata cannot be written as a property list: \(error)")
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let start = text.range(of: "<plist") else {
            throw ObjectGraphError(.unsupported, "the property list writer gave no <plist> element")
        }
        return String(text[start.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
