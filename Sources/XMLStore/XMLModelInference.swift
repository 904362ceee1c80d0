import Foundation
import ObjectGraph

/// Infers a model from an XML store file that came without one (Xcode's own mapping-model files,
/// or a Core Data file whose model is not at hand).
///
/// - Entities: every object `type` and every relationship `destination`, named as in the file
///   (upper case). Destinations without objects become empty entities.
/// - Attributes: name and type from `<attribute>`; all optional.
/// - Relationships: from `<relationship>`: destination, to-many unless max is 1, maxCount from
///   `type="min/max"`; minCount is not enforced (0), since optional to-ones are written `1/1`.
/// - Inheritance: an object of type Y reached through a relationship declared to X makes Y a
///   subentity of X; several such ancestors are chained, the one more types descend from
///   highest. A property an ancestor has is inherited, not redeclared.
/// - Inverses: relationships E→D and D→E are paired when each is the only one between the two
///   entities in its direction (for E == D, when E has exactly two relationships to itself).
enum XMLModelInference {
    static func model(from doc: XMLStoreDocument, path: String) throws(ObjectGraphError) -> ManagedObjectModel {
        func corrupt(_ message: String) -> ObjectGraphError {
            ObjectGraphError(.corruptStore, "\(path): cannot infer a model: \(message)")
        }
        var order: [String] = []
        var attributes: [String: [String: AttributeType]] = [:]
        var attributeOrder: [String: [String]] = [:]
        var relationships: [String: [String: (destination: String, max: Int)]] = [:]
        var relationshipOrder: [String: [String]] = [:]
        func note(_ type: String) {
            if attributes[type] == nil {
                attributes[type] = [:]
                relationships[type] = [:]
                order.append(type)
            }
        }
        var typeByID: [String: String] = [:]
        for object in doc.objects {
            note(object.type)
            typeByID[object.id] = object.type
            for a in object.attributes {
                guard let t = XMLValueFormat.attributeType(a.type) else {
                    throw corrupt("line \(object.line): attribute \(a.name) has unknown type \"\(a.type)\"")
                }
                if let known = attributes[object.type]![a.name] {
                    guard known == t else {
                        throw corrupt("\(object.type).\(a.name) appears as \(known.rawValue) and as \(t.rawValue)")
                    }
                } else {
                    attributes[object.type]![a.name] = t
                    attributeOrder[object.type, default: []].append(a.name)
                }
            }
            for r in object.relationships {
                guard !r.destination.isEmpty else {
                    throw corrupt("line \(object.line): relationship \(r.name) has no destination")
                }
                let parts = r.type.split(separator: "/")
                let maxCount = parts.count == 2 ? Int(parts[1]) ?? 0 : (r.idrefs.count > 1 ? 0 : 1)
                if let known = relationships[object.type]![r.name] {
                    guard known.destination == r.destination, known.max == maxCount else {
                        throw corrupt("\(object.type).\(r.name) is declared two different ways")
                    }
                } else {
                    relationships[object.type]![r.name] = (r.destination, maxCount)
                    relationshipOrder[object.type, default: []].append(r.name)
                }
            }
        }
        for object in doc.objects {
            for r in object.relationships { note(r.destination) }
        }

        // Inheritance from references whose target type differs from the declared destination.
        var required: [String: Set<String>] = [:]
        var descendantCount: [String: Int] = [:]
        for object in doc.objects {
            for r in object.relationships {
                for ref in r.idrefs {
                    guard let target = typeByID[ref] else { continue }  // reported when the graph is built
                    if target != r.destination, required[target, default: []].insert(r.destination).inserted {
                        descendantCount[r.destination, default: 0] += 1
                    }
                }
            }
        }
        var parent: [String: String] = [:]
        for type in order {
            guard let ancestors = required[type] else { continue }
            let chain = ancestors.sorted {
                (descendantCount[$0] ?? 0, $1) < (descendantCount[$1] ?? 0, $0)
            }
            var child = type
            for ancestor in chain {
                if let existing = parent[child], existing != ancestor {
                    throw corrupt("\(child) would need two parent entities, \(existing) and \(ancestor)")
                }
                parent[child] = ancestor
                child = ancestor
            }
        }
        func ancestors(of type: String) throws(ObjectGraphError) -> [String] {
            var result: [String] = []
            var current = parent[type]
            while let c = current {
                guard c != type, !result.contains(c) else { throw corrupt("entity \(type) would be its own ancestor") }
                result.append(c)
                current = parent[c]
            }
            return result
        }

        // Properties an ancestor has are inherited.
        var entities: [EntityDescription] = []
        var declared: [String: [String: (destination: String, max: Int)]] = [:]
        for type in order {
            let up = try ancestors(of: type)
            var attributeList: [AttributeDescription] = []
            for name in attributeOrder[type] ?? [] {
                let t = attributes[type]![name]!
                if let inherited = up.lazy.compactMap({ attributes[$0]?[name] }).first {
                    guard inherited == t else { throw corrupt("\(type).\(name) differs from its parent's") }
                    continue
                }
                attributeList.append(AttributeDescription(name: name, type: t))
            }
            var mine: [String: (destination: String, max: Int)] = [:]
            for name in relationshipOrder[type] ?? [] where !up.contains(where: { relationships[$0]?[name] != nil }) {
                mine[name] = relationships[type]![name]!
            }
            declared[type] = mine
            entities.append(
                EntityDescription(name: type, parentName: parent[type], attributes: attributeList))
        }
        // Inverses.
        func between(_ source: String, _ destination: String) -> [String] {
            (relationshipOrder[source] ?? []).filter { declared[source]?[$0]?.destination == destination }
        }
        var inverse: [String: [String: String]] = [:]
        for type in order {
            for name in relationshipOrder[type] ?? [] {
                guard let r = declared[type]?[name], inverse[type]?[name] == nil else { continue }
                if r.destination == type {
                    let loops = between(type, type)
                    if loops.count == 2 {
                        inverse[type, default: [:]][loops[0]] = loops[1]
                        inverse[type, default: [:]][loops[1]] = loops[0]
                    }
                    continue
                }
                let forward = between(type, r.destination)
                let backward = between(r.destination, type)
                if forward.count == 1, backward.count == 1 {
                    inverse[type, default: [:]][name] = backward[0]
                    inverse[r.destination, default: [:]][backward[0]] = name
                }
            }
        }
        for index in entities.indices {
            let type = entities[index].name
            entities[index].relationships = (relationshipOrder[type] ?? []).compactMap { name in
                guard let r = declared[type]?[name] else { return nil }
                return RelationshipDescription(
                    name: name, destinationEntityName: r.destination, inverseName: inverse[type]?[name],
                    isToMany: r.max != 1, minCount: 0, maxCount: r.max)
            }
        }
        do {
            return try ManagedObjectModel(entities: entities)
        } catch {
            throw corrupt(error.message)
        }
    }
}
