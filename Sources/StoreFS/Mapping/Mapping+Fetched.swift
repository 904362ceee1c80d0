import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Fetched properties and fetch request templates: read-only folders of links computed by their
/// predicates, evaluated when first listed and cached until something changes through the mount,
/// a commit, or a change by another process (or `touch` on the folder asks again, like Core
/// Data's refreshObject).
extension Mapping {
    /// Whether fetched property `index` of `object`'s entity has a folder (its predicate parsed).
    func hasFetchedFolder(_ object: ObjectID, _ index: Int) -> Bool {
        guard isValid(object.entity) else { return false }
        let entity = model[object.entity]
        guard index >= 0, index < entity.allFetchedProperties.count else { return false }
        return predicates.predicate(of: entity.allFetchedProperties[index].name, in: entity, model: model) != nil
    }

    /// The objects computed folder `node` lists (a fetched property's or a template's), evaluated
    /// by `evaluate` on first use and kept until something changes.
    ///
    /// When something changes while it is evaluated, it is evaluated again (a few times at most):
    /// the answer then reflects the change. One still overtaken by a change is answered but not
    /// kept, so the next listing evaluates again (the kernel keeps no listing of these folders).
    func computedMembers(of node: Node, evaluate: () throws(FileSystemError) -> [ObjectID]) throws(FileSystemError)
        -> [ObjectID]
    {
        if let cached = fetchedResults.get(node) { return cached }
        return try bounded(node) { () throws(FileSystemError) -> [ObjectID] in
            var attempts = 0
            while true {
                attempts += 1
                let generation = fetchedResults.generation
                let ids = try evaluate().filter { Node.fits($0) }
                if fetchedResults.set(ids, for: node, evaluatedIn: generation) { return ids }
                if attempts == 3 { return ids }
            }
        }
    }

    /// Forgets every fetched result (after a commit or a change by another process) and the
    /// kernel's listings of those folders.
    func dropFetchedResults() {
        for (node, members) in fetchedResults.dropAll() {
            invalidate(node)
            // The kernel would otherwise still find a link the next evaluation leaves out.
            for member in members { invalidateEntry(parent: node, name: member.key.description) }
        }
        // A query's `.count`, `.json` and `.csv` change size with its results.
        for file in queries.takeShown() { invalidate(file) }
    }
}
