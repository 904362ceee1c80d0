import Foundation

/// The model's rules applied to one object's change: what a save of a context and a replayed
/// patch (`storefs apply`) both check before they write.
///
/// A change never makes a store less valid than it was, but it is not refused because of values
/// it did not touch. Apps break their own models (Photos leaves non-optional attributes nil on
/// real assets): refusing every edit of such an object would leave it uneditable. So every
/// value the change sets (all of an inserted object's; the attributes and relationships an update
/// changes, its inverses included, which the context changes with it) must satisfy the model,
/// and the values it leaves as they were are only reported, for a warning.
///
/// Stateless; safe from any thread.
public enum ChangeValidation {
    /// Refuses an insert of an object of `entity` where the model allows none.
    public static func checkInsert(of entity: EntityDescription) throws(ObjectGraphError) {
        guard !entity.isAbstract else {
            throw ObjectGraphError(
                .validation, "entity \(entity.name) is abstract: insert an object of one of its subentities")
        }
    }

    /// Checks the attributes of `snapshot` that the change sets: `changed`, or every attribute
    /// of an inserted object (nil). Throws the first that breaks the model; returns what breaks
    /// it among the others (values the change leaves as they were).
    public static func checkAttributes(
        of snapshot: Snapshot, changed: Set<String>?, in entity: EntityDescription, object: String
    ) throws(ObjectGraphError) -> [String] {
        var untouched: [String] = []
        for attribute in entity.persistentAttributes {
            let value = snapshot.attributes[attribute.name]
            do throws(ObjectGraphError) {
                try Validator.check(value, for: attribute, in: entity, object: object)
                // A composite's element may be nil only with the whole composite (SwiftData).
                if value == nil, attribute.composite != nil,
                    !entity.mayBeNil(attribute, isNil: { snapshot.attributes[$0] == nil })
                {
                    throw ObjectGraphError(
                        .validation,
                        "\(object).\(attribute.name) is not optional and cannot be nil while "
                            + "\(attribute.composite ?? "its composite") has a value")
                }
            } catch {
                guard let changed, !changed.contains(attribute.name) else {
                    throw ObjectGraphError(error.code, error.message, objects: [snapshot.objectID])
                }
                untouched.append(error.message)
            }
        }
        return untouched
    }

    /// Checks that `relationship` of an object may hold `count` destinations, when the change
    /// sets it (`changed`); returns the violation of one it leaves as it was (nil: none).
    public static func checkRelationship(
        _ relationship: RelationshipDescription, count: Int, changed: Bool, of id: ObjectID, object: String
    ) throws(ObjectGraphError) -> String? {
        do throws(ObjectGraphError) {
            try Validator.check(count: count, for: relationship, object: object)
            return nil
        } catch {
            guard !changed else { throw ObjectGraphError(error.code, error.message, objects: [id]) }
            return error.message
        }
    }
}
