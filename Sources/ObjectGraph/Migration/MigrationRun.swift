import Foundation

/// Carries out one mapping model on a store, as Core Data's `NSMigrationManager` does: every
/// object of the old store is read; each entity mapping makes the new objects of its source
/// objects and gives them their attribute values (stage 1), then their relationships (stage 2);
/// every new object is validated against the new model (stage 3). The result is one save for an
/// empty store of the new model.
///
/// Decisions where Core Data leaves a choice (docs/MIGRATION.md):
/// - A new object keeps the primary key of the object it was made from when no other new object
///   of its inheritance tree has it; the others get keys above every kept key and above the old
///   store's key counter (Z_MAX), which the new store keeps, so no URI of a deleted object is
///   reused.
/// - Inverses are completed: setting one side of a relationship sets the other, as Core Data's
///   managed objects do; a to-one that would get two objects is an error naming them.
///
/// A value used once; not shared between threads.
struct MigrationRun {
    let sourceModel: ManagedObjectModel
    let destinationModel: ManagedObjectModel
    let mapping: MappingModel

    /// One new object, before it has a key.
    struct NewObject {
        var entity: EntityID
        var origin: ObjectID?
        var mappingName: String
        /// On the names of the entity's stored attributes, shared by every object of the mapping
        /// (as stores share them among their snapshots): it becomes the new snapshot as it is.
        var attributes = PropertyValues<AttributeValue>()
        /// Relationship name → new objects (indices into ``objects``), in order.
        var relationships: [String: [Int]] = [:]
    }

    // The old store, whole.
    var snapshots: [ObjectID: Snapshot] = [:]
    var toMany: [ObjectID: [String: [ObjectID]]] = [:]
    var objectsByEntity: [EntityID: [ObjectID]] = [:]
    var sourceCounters: [EntityID: Int64] = [:]

    // The new objects.
    var objects: [NewObject] = []
    /// Entity mapping name → old object → new objects it made.
    var associations: [String: [ObjectID: [Int]]] = [:]
    /// Old object → every new object made from it, by any mapping.
    var madeFrom: [ObjectID: [Int]] = [:]

    /// What a run gives: the save for the new store, and where each old object went (for
    /// persistent history and for the next step of a staged migration).
    struct Output {
        var request: SaveRequest
        var history: HistoryMapping
        var objectCount: Int
    }

    /// For a lightweight migration, the properties whose values the change may leave invalid
    /// (entity, property): only those are validated, as Core Data's lightweight migration checks
    /// what the change introduces and not data it never touches. nil: validate everything, as
    /// Core Data's migration manager does after a mapping model.
    let validationScope: [(entity: EntityID, property: String)]?

    init(from sourceModel: ManagedObjectModel, to destinationModel: ManagedObjectModel, mapping: MappingModel) {
        self.sourceModel = sourceModel
        self.destinationModel = destinationModel
        self.mapping = mapping.resolvingAutomaticExpressions(from: sourceModel)
        if mapping.isInferred {
            var scope: [(EntityID, String)] = []
            for entity in ModelDifference(from: sourceModel, to: destinationModel).entities {
                guard let id = destinationModel.entityID(named: entity.name) else { continue }
                for property in entity.properties {
                    if case .dependsOnData = property.verdict { scope.append((id, property.name)) }
                }
            }
            validationScope = scope
        } else {
            validationScope = nil
        }
    }

    /// Whether `property` of objects of `entity` is validated (see ``validationScope``).
    private func validates(_ property: String, of entity: EntityID) -> Bool {
        guard let scope = validationScope else { return true }
        return scope.contains { $0.property == property && destinationModel.entity(entity, isKindOf: $0.entity) }
    }

    // MARK: - Checking the mapping before anything is read

    /// Refuses what cannot run, before any object is read: a custom migration policy, a name
    /// that is not in the models, a filter predicate.
    func check() throws(ObjectGraphError) {
        var names: Set<String> = []
        for entityMapping in mapping.entityMappings {
            let here = "mapping model \(mapping.source): entity mapping \(entityMapping.name)"
            guard names.insert(entityMapping.name).inserted else {
                throw ObjectGraphError(.invalidModel, "\(here) is declared twice")
            }
            if entityMapping.hasCustomPolicy {
                throw ObjectGraphError(
                    .unsupported,
                    "\(here) uses the custom migration policy \(entityMapping.migrationPolicyClassName!), "
                        + "code of the app that storefs cannot run. Migrate this step with the app, or replace the policy by "
                        + "value expressions and relationship mappings (docs/MIGRATION.md shows how)")
            }
            if entityMapping.effectiveKind == .custom {
                throw ObjectGraphError(
                    .unsupported, "\(here) is a custom entity mapping, made by code storefs cannot run")
            }
            if let filter = entityMapping.filterPredicate?.trimmingCharacters(in: .whitespaces), !filter.isEmpty,
                filter != "TRUEPREDICATE"
            {
                throw ObjectGraphError(
                    .unsupported, "\(here) has the filter predicate \"\(filter)\"; storefs migrates whole entities only"
                )
            }
            var source: EntityDescription?
            if let name = entityMapping.sourceEntityName {
                source = sourceModel.entity(named: name)
                if source == nil && entityMapping.effectiveKind != .add {
                    throw ObjectGraphError(
                        .invalidModel, "\(here) names source entity \(name), which the old model does not have")
                }
            }
            guard let destinationName = entityMapping.destinationEntityName, entityMapping.effectiveKind != .remove
            else { continue }
            guard let destination = destinationModel.entity(named: destinationName) else {
                throw ObjectGraphError(
                    .invalidModel,
                    "\(here) names destination entity \(destinationName), which the new model does not have")
            }
            for property in entityMapping.attributeMappings {
                guard let attribute = destination.attribute(named: property.name), !attribute.isTransient else {
                    throw ObjectGraphError(
                        .invalidModel,
                        "\(here) maps attribute \(property.name), which \(destinationName) does not keep in the store")
                }
                if let expression = property.valueExpression {
                    try checkKeys(expression, source: source, here: "\(here).\(property.name)")
                }
            }
            for property in entityMapping.relationshipMappings {
                guard let relationship = destination.relationship(named: property.name), !relationship.isTransient
                else {
                    throw ObjectGraphError(
                        .invalidModel,
                        "\(here) maps relationship \(property.name), which \(destinationName) does not have")
                }
                if let expression = property.valueExpression {
                    try checkKeys(expression, source: source, here: "\(here).\(property.name)")
                }
            }
        }
    }

    /// A `$source.key` must name a property of the source entity (a typo would otherwise give
    /// nil to every object).
    private func checkKeys(_ expression: MappingExpression, source: EntityDescription?, here: String)
        throws(ObjectGraphError)
    {
        var pending = [expression]
        var seen = 0
        while let next = pending.popLast() {
            seen += 1
            guard seen <= 10_000 else { return }
            var first: String?
            switch next {
            case .variable("source", let path): first = path.first
            case .keyPath(let path): first = path.first
            case .function(let target, _, let arguments): pending += [target] + arguments
            case .builtin(_, let arguments): pending += arguments
            case .aggregate(let items): pending += items
            default: break
            }
            guard let key = first, !key.hasPrefix("@") else { continue }
            guard let source else {
                throw ObjectGraphError(
                    .invalidModel, "\(here): \(next) reads $source, but the mapping has no source entity")
            }
            if source.attribute(named: key) == nil && source.relationship(named: key) == nil {
                throw ObjectGraphError(
                    .invalidModel, "\(here): \(next) names \(key), which \(source.name) of the old model does not have")
            }
        }
    }

    // MARK: - Running

    /// Reads every object of `store` (opened with the old model) and makes the new graph.
    mutating func run(on store: any PersistentStore, progress: (Int, Int) -> Void = { _, _ in })
        throws(ObjectGraphError) -> Output
    {
        try check()
        try load(store, progress: progress)
        try createObjects()
        try createRelationships()
        try completeInverses()
        let keys = try assignKeys()
        try validate(keys: keys)
        return try output(keys: keys)
    }

    static let batchSize = 5_000

    private mutating func load(_ store: any PersistentStore, progress: (Int, Int) -> Void) throws(ObjectGraphError) {
        var total = 0
        for entity in sourceModel.entities { total += try store.count(of: entity.id) }
        var done = 0
        for entity in sourceModel.entities {
            let ids = try store.objectIDs(of: entity.id)
            objectsByEntity[entity.id] = ids
            var start = 0
            while start < ids.count {
                let batch = Array(ids[start..<min(start + Self.batchSize, ids.count)])
                let read = try store.snapshots(for: batch)
                guard read.count == batch.count else {
                    throw ObjectGraphError(.corruptStore, "the store changed while it was being migrated; try again")
                }
                for snapshot in read { snapshots[snapshot.objectID] = snapshot }
                for relationship in entity.persistentRelationships where relationship.isToMany {
                    let lists = try store.toManyDestinations(of: relationship.name, in: entity.id, for: batch)
                    for (id, list) in lists where !list.isEmpty { toMany[id, default: [:]][relationship.name] = list }
                }
                done += batch.count
                progress(done, total)
                start += batch.count
            }
        }
        for root in sourceModel.rootEntities {
            let counter = try store.highestKey(in: root.id)
            if counter > 0 { sourceCounters[root.id] = counter }
        }
    }

    /// Stage 1: the new objects and their attributes.
    private mutating func createObjects() throws(ObjectGraphError) {
        for entityMapping in mapping.entityMappings {
            let kind = entityMapping.effectiveKind
            guard kind == .transform || kind == .copy, let sourceName = entityMapping.sourceEntityName,
                let sourceID = sourceModel.entityID(named: sourceName),
                let destinationName = entityMapping.destinationEntityName,
                let destinationID = destinationModel.entityID(named: destinationName)
            else { continue }
            let destination = destinationModel[destinationID]
            let attributeMappings =
                kind == .copy && entityMapping.attributeMappings.isEmpty
                ? Self.sameNameAttributeMappings(from: sourceModel[sourceID], to: destination)
                : entityMapping.attributeMappings
            var table: [ObjectID: [Int]] = [:]
            if destination.isAbstract, let first = objectsByEntity[sourceID]?.first {
                throw ObjectGraphError(
                    .validation,
                    "\(destination.name) is abstract in the new model, but the store holds \(sourceName) objects of that entity "
                        + "itself (\(sourceName) \(first.key), ...); a mapping model must say which subentity they become",
                    objects: [first])
            }
            // Resolved once per mapping: the attribute each mapping sets, and, for `$source.NAME`
            // of a stored attribute (every mapping of a lightweight step), the old name to read
            // straight from the snapshot instead of evaluating an expression per object.
            let sourceEntity = sourceModel[sourceID]
            let plans: [(attribute: AttributeDescription, expression: MappingExpression, copies: String?)] =
                attributeMappings.compactMap { property in
                    guard let expression = property.valueExpression,
                        let attribute = destination.attribute(named: property.name)
                    else { return nil }
                    var copies: String?
                    if case .variable("source", let path) = expression, path.count == 1,
                        let old = sourceEntity.attribute(named: path[0]), !old.isTransient
                    {
                        copies = path[0]
                    }
                    return (attribute, expression, copies)
                }
            var prototype = PropertyValues<AttributeValue>(
                layout: PropertyNames(destination.persistentAttributes.map(\.name)))
            for attribute in destination.persistentAttributes {
                if let value = attribute.defaultValue { prototype[attribute.name] = value }
            }
            for id in objectsByEntity[sourceID] ?? [] {
                var object = NewObject(entity: destinationID, origin: id, mappingName: entityMapping.name)
                object.attributes = prototype
                for (attribute, expression, copies) in plans {
                    let context = EvaluationContext(
                        source: id, destination: nil, mapping: entityMapping, property: attribute.name)
                    let value: Value
                    if let copies {
                        value = snapshots[id]?.attributes[copies].map(Value.scalar) ?? .null
                    } else {
                        value = try evaluate(expression, context, depth: 0)
                    }
                    var converted = try attributeValue(value, for: attribute, of: destination, context: context)
                    // Lightweight: a value the old store left nil takes the default of an
                    // attribute that is mandatory now (optional → mandatory with a default).
                    if converted == nil, mapping.isInferred, !attribute.isOptional {
                        converted = attribute.defaultValue
                    }
                    object.attributes[attribute.name] = converted
                }
                table[id] = [objects.count]
                madeFrom[id, default: []].append(objects.count)
                objects.append(object)
            }
            associations[entityMapping.name] = table
        }
    }

    /// Stage 2: relationships, by the relationship mappings' expressions.
    private mutating func createRelationships() throws(ObjectGraphError) {
        for entityMapping in mapping.entityMappings {
            guard let table = associations[entityMapping.name],
                let destinationName = entityMapping.destinationEntityName,
                let destination = destinationModel.entity(named: destinationName),
                let sourceName = entityMapping.sourceEntityName,
                let source = sourceModel.entity(named: sourceName)
            else { continue }
            let relationshipMappings =
                entityMapping.effectiveKind == .copy && entityMapping.relationshipMappings.isEmpty
                ? Self.sameNameRelationshipMappings(from: source, to: destination) : entityMapping.relationshipMappings
            let origins = table.sorted(by: { $0.key < $1.key })
            for property in relationshipMappings {
                guard let expression = property.valueExpression,
                    let relationship = destination.relationship(named: property.name),
                    let target = destinationModel.entityID(named: relationship.destinationEntityName)
                else { continue }
                let kinds = Set(destinationModel.entityAndSubentities(of: target))
                // The new objects of what an old relationship held (every relationship mapping of
                // a lightweight step): read straight from the old graph, not evaluated per object.
                var follows: RelationshipDescription?
                if expression == .followingSourceRelationship(expression.sourceKey ?? ""),
                    let name = expression.sourceKey,
                    let old = source.relationship(named: name), !old.isTransient
                {
                    follows = old
                }
                for (origin, made) in origins {
                    for index in made {
                        let context = EvaluationContext(
                            source: origin, destination: index, mapping: entityMapping, property: property.name,
                            relationship: relationship)
                        if let follows {
                            let reached =
                                follows.isToMany
                                ? toMany[origin]?[follows.name] ?? []
                                : snapshots[origin]?.toOne[follows.name].map { [$0] } ?? []
                            var unique: [Int] = []
                            var seen: Set<Int> = []
                            for old in reached {
                                for item in madeFrom[old] ?? []
                                where kinds.contains(objects[item].entity) && seen.insert(item).inserted {
                                    unique.append(item)
                                }
                            }
                            objects[index].relationships[relationship.name] = unique
                            continue
                        }
                        let list: [Int]
                        switch try evaluate(expression, context, depth: 0) {
                        case .null: list = []
                        case .destinations(let found): list = found
                        case .sources(let found) where found.isEmpty: list = []
                        case .sources:
                            throw failure(
                                context,
                                "gives objects of the old store; relationship mappings give new objects through "
                                    + "FUNCTION($manager, \"destinationInstancesForEntityMappingNamed:sourceInstances:\", \"MAPPING\", $source.\(property.name))"
                            )
                        case let other:
                            throw failure(context, "gives \(other.summary), not objects")
                        }
                        for item in list where !kinds.contains(objects[item].entity) {
                            throw failure(
                                context,
                                "gives a \(destinationModel[objects[item].entity].name), but \(destination.name).\(relationship.name) "
                                    + "holds \(relationship.destinationEntityName) objects")
                        }
                        var unique: [Int] = []
                        var seen: Set<Int> = []
                        for item in list where seen.insert(item).inserted { unique.append(item) }
                        objects[index].relationships[relationship.name] = unique
                    }
                }
            }
        }
    }

    /// Setting one side of a relationship sets the other, as Core Data's objects do.
    private mutating func completeInverses() throws(ObjectGraphError) {
        // Membership of long lists is checked through a set made the first time a list is
        // checked (a department's thousands of employees), short ones by a scan: memory only for
        // the lists that need it, and no scan per link of a long one.
        var present: [Int: [String: Set<Int>]] = [:]
        for index in objects.indices {
            let entity = destinationModel[objects[index].entity]
            for relationship in entity.persistentRelationships {
                guard let inverse = destinationModel.inverse(of: relationship), !inverse.isTransient,
                    let targets = objects[index].relationships[relationship.name]
                else { continue }
                for target in targets {
                    let list = objects[target].relationships[inverse.name] ?? []
                    let has: Bool
                    if list.count <= 16 {
                        has = list.contains(index)
                    } else {
                        if present[target]?[inverse.name] == nil {
                            present[target, default: [:]][inverse.name] = Set(list)
                        }
                        has = !present[target, default: [:]][inverse.name, default: []].insert(index).inserted
                    }
                    if !has { objects[target].relationships[inverse.name, default: []].append(index) }
                }
            }
        }
        present.removeAll()
        for index in objects.indices {
            let entity = destinationModel[objects[index].entity]
            for relationship in entity.persistentRelationships where !relationship.isToMany {
                let list = objects[index].relationships[relationship.name] ?? []
                if list.count > 1 {
                    let names = list.prefix(5).map { describe($0) }.joined(separator: ", ")
                    throw ObjectGraphError(
                        .validation,
                        "\(describe(index)).\(relationship.name) is a to-one relationship, but the migration gives it "
                            + "\(list.count) objects (\(names)\(list.count > 5 ? ", ..." : ""))",
                        objects: objects[index].origin.map { [$0] } ?? [])
                }
            }
        }
    }

    /// Keys: each new object keeps its old key when its tree has it free.
    private func assignKeys() throws(ObjectGraphError) -> [PrimaryKey] {
        var keys = [PrimaryKey?](repeating: nil, count: objects.count)
        var taken: [EntityID: Set<Int64>] = [:]
        var highest: [EntityID: Int64] = [:]
        for index in objects.indices {
            guard let origin = objects[index].origin else { continue }
            let root = destinationModel[objects[index].entity].rootID
            if taken[root, default: []].insert(origin.key.rawValue).inserted {
                keys[index] = origin.key
                highest[root] = max(highest[root] ?? 0, origin.key.rawValue)
                let sourceRoot = sourceModel[origin.entity].rootID
                highest[root] = max(highest[root] ?? 0, sourceCounters[sourceRoot] ?? 0)
            }
        }
        for index in objects.indices where keys[index] == nil {
            let root = destinationModel[objects[index].entity].rootID
            let (next, overflow) = (highest[root] ?? 0).addingReportingOverflow(1)
            guard !overflow else {
                throw ObjectGraphError(
                    .unsupported, "\(destinationModel[root].name) has no primary key left for new objects")
            }
            highest[root] = next
            keys[index] = PrimaryKey(next)
        }
        return keys.map { $0! }
    }

    /// Stage 3: every new object against the new model.
    private func validate(keys: [PrimaryKey]) throws(ObjectGraphError) {
        for (index, object) in objects.enumerated() {
            let entity = destinationModel[object.entity]
            var name = "\(entity.name) \(keys[index])"
            if let origin = object.origin, origin.key != keys[index] || sourceModel[origin.entity].name != entity.name {
                name += " (from \(sourceModel[origin.entity].name) \(origin.key))"
            }
            for attribute in entity.persistentAttributes
            where attribute.derivationExpression == nil && validates(attribute.name, of: entity.id) {
                do throws(ObjectGraphError) {
                    try Validator.check(object.attributes[attribute.name], for: attribute, in: entity, object: name)
                    if object.attributes[attribute.name] == nil, attribute.composite != nil,
                        !entity.mayBeNil(attribute, isNil: { object.attributes[$0] == nil })
                    {
                        throw ObjectGraphError(
                            .validation,
                            "\(name).\(attribute.name) is not optional and cannot be nil while \(attribute.composite ?? "its composite") has a value"
                        )
                    }
                } catch {
                    throw ObjectGraphError(
                        .validation, "the migrated store would not be valid: \(error.message)",
                        objects: object.origin.map { [$0] } ?? [])
                }
            }
            for relationship in entity.persistentRelationships where validates(relationship.name, of: entity.id) {
                do {
                    try Validator.check(
                        count: object.relationships[relationship.name]?.count ?? 0, for: relationship, object: name)
                } catch {
                    throw ObjectGraphError(
                        .validation, "the migrated store would not be valid: \(error.message)",
                        objects: object.origin.map { [$0] } ?? [])
                }
            }
        }
    }

    private func output(keys: [PrimaryKey]) throws(ObjectGraphError) -> Output {
        let ids = objects.indices.map { ObjectID(entity: objects[$0].entity, key: keys[$0]) }
        var request = SaveRequest()
        request.inserted.reserveCapacity(objects.count)
        var counters: [EntityID: Int64] = [:]
        for (index, object) in objects.enumerated() {
            let entity = destinationModel[object.entity]
            var snapshot = Snapshot(objectID: ids[index], version: 1)
            snapshot.attributes = object.attributes
            for relationship in entity.persistentRelationships {
                let list = object.relationships[relationship.name] ?? []
                if relationship.isToMany {
                    if !list.isEmpty {
                        var destinations = list.map { ids[$0] }
                        if !relationship.isOrdered { destinations.sort() }
                        request.toManyChanges.append(
                            .init(source: ids[index], relationship: relationship.name, destinations: destinations))
                    }
                } else if let first = list.first {
                    snapshot.toOne[relationship.name] = ids[first]
                }
            }
            request.inserted.append(snapshot)
            counters[entity.rootID] = max(counters[entity.rootID] ?? 0, keys[index].rawValue)
        }
        // The old store's key counters, in the trees its objects went to with their keys.
        for (index, object) in objects.enumerated() {
            guard let origin = object.origin, keys[index] == origin.key else { continue }
            let root = destinationModel[object.entity].rootID
            counters[root] = max(counters[root] ?? 0, sourceCounters[sourceModel[origin.entity].rootID] ?? 0)
        }
        request.keyCounters = counters
        var map: [ObjectID: ObjectID] = [:]
        for (origin, made) in madeFrom { if let first = made.first { map[origin] = ids[first] } }
        return Output(request: request, history: historyMapping(objects: map), objectCount: objects.count)
    }

    /// Each old entity goes to the new entity of its mapping (the one that keeps its name, when
    /// several take it); its properties to those whose mapping is `$source.name`.
    private func historyMapping(objects map: [ObjectID: ObjectID]) -> HistoryMapping {
        var entities: [EntityID: EntityID] = [:]
        var properties: [EntityID: [String: String]] = [:]
        for entityMapping in mapping.entityMappings {
            let kind = entityMapping.effectiveKind
            guard kind == .transform || kind == .copy, let sourceName = entityMapping.sourceEntityName,
                let old = sourceModel.entityID(named: sourceName),
                let destinationName = entityMapping.destinationEntityName,
                let new = destinationModel.entityID(named: destinationName)
            else { continue }
            if let chosen = entities[old], destinationModel[chosen].name == sourceName || destinationName != sourceName
            {
                continue
            }
            entities[old] = new
            var names: [String: String] = [:]
            let attributeMappings =
                kind == .copy && entityMapping.attributeMappings.isEmpty
                ? Self.sameNameAttributeMappings(from: sourceModel[old], to: destinationModel[new])
                : entityMapping.attributeMappings
            let relationshipMappings =
                kind == .copy && entityMapping.relationshipMappings.isEmpty
                ? Self.sameNameRelationshipMappings(from: sourceModel[old], to: destinationModel[new])
                : entityMapping.relationshipMappings
            for property in attributeMappings + relationshipMappings {
                if let origin = property.valueExpression?.sourceKey { names[origin] = property.name }
            }
            properties[old] = names
        }
        return HistoryMapping(objects: map, entities: entities, properties: properties)
    }

    // MARK: - Generated mappings

    /// A Copy mapping without property mappings copies every property the two entities share by name.
    static func sameNameAttributeMappings(from source: EntityDescription, to destination: EntityDescription)
        -> [PropertyMapping]
    {
        destination.persistentAttributes.compactMap { attribute in
            source.attribute(named: attribute.name).map { _ in
                PropertyMapping(name: attribute.name, valueExpression: .variable("source", keyPath: [attribute.name]))
            }
        }
    }

    static func sameNameRelationshipMappings(from source: EntityDescription, to destination: EntityDescription)
        -> [PropertyMapping]
    {
        destination.persistentRelationships.compactMap { relationship in
            source.relationship(named: relationship.name).map { _ in
                PropertyMapping(
                    name: relationship.name, valueExpression: .followingSourceRelationship(relationship.name))
            }
        }
    }

    // MARK: - Messages

    func describe(_ index: Int) -> String {
        let object = objects[index]
        let name = destinationModel[object.entity].name
        if let origin = object.origin { return "\(name) made from \(sourceModel[origin.entity].name) \(origin.key)" }
        return "a new \(name)"
    }
}

extension MappingExpression {
    /// `FUNCTION($entityPolicy, "destinationInstancesForSourceRelationshipNamed:sourceInstances:", NAME, $source.NAME)`:
    /// the new objects of what an old relationship held, as Xcode writes a relationship mapping.
    static func followingSourceRelationship(_ name: String) -> MappingExpression {
        .function(
            .variable("entityPolicy", keyPath: []),
            selector: "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
            arguments: [.constant(.string(name)), .variable("source", keyPath: [name])])
    }

    /// The old property whose values this expression carries straight across, if it does.
    var sourceKey: String? {
        switch self {
        case .variable("source", let path) where path.count == 1: return path[0]
        case .function(_, let selector, let arguments)
        where selector.hasPrefix("destinationInstancesFor") && arguments.count == 2:
            if case .variable("source", let path) = arguments[1], path.count == 1 { return path[0] }
            return nil
        default: return nil
        }
    }
}
