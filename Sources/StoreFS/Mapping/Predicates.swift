import Foundation
import ObjectGraph

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
                    fetched[entity.name, default: [:]][property.name] = try PredicateParser.parse(
                        property.predicateString)
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
