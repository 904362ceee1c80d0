import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Fetched properties and fetch request templates: read-only folders of links computed by their
/// predicates, evaluated when first listed and cached until something changes through the mount,
/// a commit, or a change by another process (or `touch` on the folder asks again, like Core
/// Data's refreshObject).
extension StoreFileSystem {
    /// The name of the root folder holding the model's fetch request templates.
    static let templatesName = ".fetchRequests"

    /// The parsed predicates of the model's fetched properties and templates; the ones that do not
    /// parse are reported once and left out (their folders are absent), the rest mount.
    final class Predicates: Sendable {
        let fetched: [String: [String: ObjectGraph.Predicate]]
        let templates: [Int: ObjectGraph.Predicate]

        init(model: ManagedObjectModel, report: (String) -> Void) {
            var fetched: [String: [String: ObjectGraph.Predicate]] = [:]
            for entity in model.entities {
                for property in entity.fetchedProperties {
                    do throws(ObjectGraphError) {
                        fetched[entity.name, default: [:]][property.name] = try PredicateParser.parse(property.predicateString)
                    } catch {
                        report("fetched property \(entity.name).\(property.name) is left out: \(error.message)")
                    }
                }
            }
            var templates: [Int: ObjectGraph.Predicate] = [:]
            for (index, template) in model.fetchRequestTemplates.enumerated() {
                do throws(ObjectGraphError) {
                    templates[index] = try PredicateParser.parse(template.predicateString ?? "TRUEPREDICATE")
                } catch {
                    report("fetch request \(template.name) is left out: \(error.message)")
                }
            }
            self.fetched = fetched
            self.templates = templates
        }

        /// The predicate of fetched property `name` of `entity` (declared there or inherited).
        func predicate(of name: String, in entity: EntityDescription, model: ManagedObjectModel) -> ObjectGraph.Predicate? {
            var current: EntityDescription? = entity
            while let e = current {
                if let p = fetched[e.name]?[name] { return p }
                current = e.parentID.map { model[$0] }
            }
            return nil
        }
    }

    /// The cached results of fetched properties and templates, by folder.
    ///
    /// A result is evaluated without the lock, so a change can drop everything while one is being
    /// evaluated; the generation, moved by every drop, keeps such a result out of the cache (kept,
    /// it would list what the folder held before the change until the next one).
    final class FetchedResults: Sendable {
        private struct State {
            var results: [Node: [ObjectID]] = [:]
            var generation: UInt64 = 0
        }

        private let state = Mutex(State())

        func get(_ node: Node) -> [ObjectID]? { state.withLock { $0.results[node] } }

        /// The generation to give ``set(_:for:evaluatedIn:)`` for a result evaluated from now.
        var generation: UInt64 { state.withLock { $0.generation } }

        /// Keeps `ids` for `node` unless a drop came since `generation` was read; returns whether
        /// it kept them.
        func set(_ ids: [ObjectID], for node: Node, evaluatedIn generation: UInt64) -> Bool {
            state.withLock { state in
                guard state.generation == generation else { return false }
                state.results[node] = ids
                return true
            }
        }

        func drop(_ node: Node) {
            state.withLock { state in
                state.generation &+= 1
                state.results.removeValue(forKey: node)
            }
        }

        /// Drops everything; returns the folders that were cached (their kernel listings go too).
        func dropAll() -> [Node] {
            state.withLock { state in
                state.generation &+= 1
                defer { state.results = [:] }
                return Array(state.results.keys)
            }
        }
    }

    /// Whether fetched property `index` of `object`'s entity has a folder (its predicate parsed).
    func hasFetchedFolder(_ object: ObjectID, _ index: Int) -> Bool {
        let entity = model[object.entity]
        guard index < entity.allFetchedProperties.count else { return false }
        return predicates.predicate(of: entity.allFetchedProperties[index].name, in: entity, model: model) != nil
    }

    /// The objects fetched property folder (or template folder) `node` lists, evaluated on first use.
    ///
    /// When something changes while it is evaluated, it is evaluated again (a few times at most):
    /// the answer then reflects the change. One still overtaken by a change is answered but not
    /// kept, so the next listing evaluates again (the kernel keeps no listing of these folders).
    func fetchedMembers(of node: Node) throws(FileSystemError) -> [ObjectID] {
        if let cached = fetchedResults.get(node) { return cached }
        var attempts = 0
        while true {
            attempts += 1
            let generation = fetchedResults.generation
            let ids = try evaluateFetched(node)
            if fetchedResults.set(ids, for: node, evaluatedIn: generation) { return ids }
            if attempts == 3 { return ids }
        }
    }

    /// Evaluates the predicate of fetched property (or template) folder `node`.
    private func evaluateFetched(_ node: Node) throws(FileSystemError) -> [ObjectID] {
        let ids: [ObjectID]
        switch node {
        case .fetched(let object, let index):
            let entity = model[object.entity]
            let property = entity.allFetchedProperties[index]
            guard let predicate = predicates.predicate(of: property.name, in: entity, model: model),
                let destination = model.entityID(named: property.destinationEntityName)
            else { throw .notFound }
            ids = try engine({ () throws(ObjectGraphError) in
                try context.objects(
                    matching: predicate, of: destination, includingSubentities: true, source: object, fetchedProperty: property)
            }, "evaluate \(describe(object))/\(property.name)")
        case .template(let index):
            guard let predicate = predicates.templates[index], index < model.fetchRequestTemplates.count,
                let entity = model.entityID(named: model.fetchRequestTemplates[index].entityName)
            else { throw .notFound }
            ids = try engine({ () throws(ObjectGraphError) in
                try context.objects(matching: predicate, of: entity, includingSubentities: true)
            }, "evaluate \(model.fetchRequestTemplates[index].name)")
        default:
            throw .notDirectory
        }
        return ids.filter { Node.fits($0) }
    }

    /// Forgets every fetched result (after a commit or a change by another process) and the
    /// kernel's listings of those folders.
    func dropFetchedResults() {
        for node in fetchedResults.dropAll() { invalidate(node) }
    }
}
