import Foundation
import AtomicStore
import ObjectGraph

/// Matches a parsed XML store to a model and builds the in-memory graph.
///
/// Names match case-insensitively (Core Data lower-cases property names and upper-cases entity
/// names in the file). Ids `z<N>` become keys as ``XMLStoreWriter`` describes.
enum XMLGraphBuilder {
    /// The graph of `doc`'s objects; `doc.objects` is left emptied, each freed once read.
    static func graph(from doc: inout XMLStoreDocument, model: ManagedObjectModel, path: String)
        throws(ObjectGraphError)
        -> StoreGraph
    {
        func corrupt(_ message: String) -> ObjectGraphError { ObjectGraphError(.corruptStore, "\(path): \(message)") }

        var metadata = StoreMetadata(doc.metadata)
        var offsets: [EntityID: Int64] = [:]
        var savedMax: [EntityID: Int64]?
        if let table = metadata[XMLStoreWriter.keysKey] {
            guard case .dictionary(let entries) = table else {
                throw corrupt("metadata \(XMLStoreWriter.keysKey) is not a dictionary")
            }
            var maxima: [EntityID: Int64] = [:]
            for (name, value) in entries {
                guard let entity = model.entity(named: name), entity.parentID == nil else {
                    throw corrupt(
                        "metadata \(XMLStoreWriter.keysKey) names \(name), which is not a root entity of the model")
                }
                guard case .array(let pair) = value, pair.count == 2, case .integer(let offset) = pair[0],
                    case .integer(let maximum) = pair[1], offset >= 0, maximum >= 0
                else { throw corrupt("metadata \(XMLStoreWriter.keysKey) entry \(name) is not [offset, max key]") }
                offsets[entity.id] = offset
                maxima[entity.id] = maximum
            }
            savedMax = maxima
            metadata[XMLStoreWriter.keysKey] = nil
        }
        metadata.storeType = XMLStoreType.typeName
        if let uuid = doc.uuid, !uuid.isEmpty { metadata.storeUUID = uuid }
        if metadata.storeUUID == nil { metadata.storeUUID = StoreMetadata.newStoreUUID() }

        var entityByType: [String: EntityID] = [:]
        for entity in model.entities { entityByType[entity.name.uppercased()] = entity.id }
        struct Properties {
            /// Each attribute by lowercased name, with its slot in ``attributeNames``.
            var attributes: [String: (description: AttributeDescription, slot: Int)] = [:]
            var relationships: [String: RelationshipDescription] = [:]
            /// Shared by every snapshot of the entity.
            var attributeNames = PropertyNames.none
            var toOneNames = PropertyNames.none
        }
        var properties: [EntityID: Properties] = [:]
        for entity in model.entities {
            var p = Properties()
            let attributes = entity.persistentAttributes
            let slots: [Int]
            (p.attributeNames, slots) = PropertyNames.slotted(attributes.map(\.name))
            for (a, slot) in zip(attributes, slots) { p.attributes[a.name.lowercased()] = (a, slot) }
            for r in entity.persistentRelationships { p.relationships[r.name.lowercased()] = r }
            p.toOneNames = PropertyNames(entity.persistentRelationships.filter { !$0.isToMany }.map(\.name))
            properties[entity.id] = p
        }

        // Pass 1: identities.
        var ids: [String: ObjectID] = [:]
        ids.reserveCapacity(doc.objects.count)
        var maxZ: Int64 = 0
        var objectsPerRoot: [EntityID: Int] = [:]
        for object in doc.objects {
            // Names are looked up as written first: Core Data and storefs write them in the case
            // they are keyed by, and casing ten million names costs seconds at a million objects.
            guard let entity = entityByType[object.type] ?? entityByType[object.type.uppercased()] else {
                throw corrupt(
                    "line \(object.line): object \(object.id) has type \(object.type), which the model has no entity for"
                )
            }
            guard object.id.first == "z", let n = Int64(object.id.dropFirst()), n > 0 else {
                throw corrupt("line \(object.line): object id \"\(object.id)\" is not z<number>")
            }
            let root = model[entity].rootID
            let key = n - (offsets[root] ?? 0)
            guard key > 0 else {
                throw corrupt("line \(object.line): object id \(object.id) is below its entity's key offset")
            }
            let id = ObjectID(entity: entity, key: PrimaryKey(key))
            guard ids.updateValue(id, forKey: object.id) == nil else {
                throw corrupt("line \(object.line): object id \(object.id) is used twice")
            }
            maxZ = max(maxZ, n)
            objectsPerRoot[root, default: 0] += 1
        }

        // Pass 2: values and references.
        var graph = StoreGraph(metadata: metadata)
        graph.reserve(objects: doc.objects.count)
        // Each root's tables stay out of the graph while its objects load (found by entity number,
        // not hashed per object), and go back once all are loaded.
        var runs: [StoreGraph.RootLoad?] = Array(repeating: nil, count: model.entities.count + 1)
        for index in doc.objects.indices {
            // Taken out of the document, so that each object's text is freed as its snapshot is
            // made: the document and the graph are not both whole in memory.
            var object = XMLStoreDocument.RawObject(type: "", id: "", line: 0)
            swap(&object, &doc.objects[index])
            let id = ids[object.id]!
            let entity = model[id.entity]
            let props = properties[id.entity]!
            var snapshot = Snapshot(
                objectID: id, version: 1, attributes: PropertyValues(layout: props.attributeNames),
                toOne: PropertyValues(layout: props.toOneNames))
            for raw in object.attributes {
                guard let (attribute, slot) = props.attributes[raw.name] ?? props.attributes[raw.name.lowercased()]
                else {
                    throw corrupt(
                        "line \(object.line): object \(object.id): entity \(entity.name) has no attribute \(raw.name)")
                }
                guard let value = XMLValueFormat.value(raw.text, as: attribute.type) else {
                    let shown = raw.text.count > 60 ? String(raw.text.prefix(60)) + "…" : raw.text
                    throw corrupt(
                        "line \(object.line): object \(object.id): \(entity.name).\(attribute.name) value \"\(shown)\" is not a valid \(attribute.type.rawValue)"
                    )
                }
                snapshot.attributes.setValue(value, slot: slot)
            }
            for raw in object.relationships {
                guard let relationship = props.relationships[raw.name] ?? props.relationships[raw.name.lowercased()]
                else {
                    throw corrupt(
                        "line \(object.line): object \(object.id): entity \(entity.name) has no relationship \(raw.name)"
                    )
                }
                var targets: [ObjectID] = []
                targets.reserveCapacity(raw.idrefs.count)
                for ref in raw.idrefs {
                    guard let target = ids[ref] else {
                        throw corrupt(
                            "line \(object.line): object \(object.id): \(raw.name) refers to \(ref), which does not exist"
                        )
                    }
                    targets.append(target)
                }
                if relationship.isToMany {
                    graph.toMany[.init(source: id, relationship: relationship.name)] = targets
                } else if targets.count > 1 {
                    throw corrupt(
                        "line \(object.line): object \(object.id): to-one \(raw.name) lists \(targets.count) objects")
                } else if let target = targets.first {
                    snapshot.toOne[relationship.name] = target
                }
            }
            let root = entity.rootID
            var run = runs[root.rawValue].take() ?? graph.startLoading(root: root, expecting: objectsPerRoot[root] ?? 0)
            let loaded = graph.load(snapshot, into: &run)
            runs[root.rawValue] = run
            guard loaded else {
                throw corrupt(
                    "line \(object.line): object \(object.id) has the same key as another object of \(model[root].name)"
                )
            }
        }
        for case let run? in runs { graph.finishLoading(run) }

        // Keys handed out: exact when storefs wrote the file; otherwise above every id in the file,
        // so that new objects keep z-ids unique as Core Data expects.
        if let savedMax {
            for (root, m) in savedMax { graph.maxKey[root] = max(graph.maxKey[root] ?? 0, m) }
        } else {
            let next = Int64(doc.nextObjectID?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
            for root in model.rootEntities { graph.maxKey[root.id] = max(next, maxZ) }
        }
        return graph
    }
}
