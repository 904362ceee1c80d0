import Foundation

extension ObjectContext {
    /// The objects of `entity` (and its subentities, unless told otherwise) that match
    /// `predicate`, by key unless `sortKeys` say otherwise.
    ///
    /// Variables are replaced by their values first: `$FETCH_SOURCE.keyPath` is read from `source`
    /// through this context, `$FETCHED_PROPERTY.userInfo.key` and `.name` come from
    /// `fetchedProperty`, other `$NAME`s from `variables`. The predicate without variables then
    /// goes to the store, which answers in one request when it can evaluate it (SQLite and
    /// PostgreSQL stores translate most predicates to SQL; where PostgreSQL's SQL cannot decide a
    /// comparison exactly, its answer holds every match and the evaluator decides those objects
    /// only); otherwise, or when this context has unsaved changes the store cannot see, the
    /// context evaluates it in memory with ``PredicateEvaluator``, in batches.
    /// Both paths give the same objects; `strategy` forces one of them.
    ///
    /// - Throws: what ``PredicateEvaluator`` throws (unknown keys, variables without a value);
    ///   ``ObjectGraphError/Code/unsupported`` when `strategy` is ``FetchStrategy/store`` and the
    ///   store cannot evaluate the predicate; store errors.
    public func objects(
        matching predicate: Predicate, of entity: EntityID, includingSubentities: Bool = true, source: ObjectID? = nil,
        fetchedProperty: FetchedPropertyDescription? = nil, variables: [String: AttributeValue] = [:],
        sortedBy sortKeys: [SortKey] = [], strategy: FetchStrategy = .automatic
    ) throws(ObjectGraphError) -> [ObjectID] {
        guard entity.rawValue >= 1, entity.rawValue <= model.entities.count else {
            throw ObjectGraphError(.notFound, "\(entity) is not an entity of the model")
        }
        let evaluator = PredicateEvaluator(
            context: self, source: source, fetchedProperty: fetchedProperty, variables: variables)
        var found: [ObjectID]?
        if strategy == .store || (strategy == .automatic && !hasChanges) {
            if let plain = try substitutingVariables(in: predicate, evaluator: evaluator, entity: entity),
                let candidates = try coordinator.store.candidates(
                    matching: plain, of: entity, includingSubentities: includingSubentities)
            {
                // A store that could not decide every comparison narrowed the objects to read:
                // the evaluator decides those, and reads no other.
                found =
                    candidates.exact
                    ? candidates.ids : try evaluator.objects(among: candidates.ids, matching: predicate)
            }
            if found == nil && strategy == .store {
                throw ObjectGraphError(
                    .unsupported,
                    "the \(coordinator.store.storeType) store cannot evaluate \(predicate) for \(model[entity].name); "
                        + "fetch with the automatic or in-memory strategy")
            }
        }
        let ids: [ObjectID]
        if let found {
            ids = found
        } else {
            ids = try evaluator.objects(of: entity, matching: predicate, includingSubentities: includingSubentities)
        }
        return sortKeys.isEmpty ? ids : try sorted(ids, by: sortKeys, evaluator: evaluator)
    }

    /// `predicate` with every variable replaced by its value as a constant (an object, a
    /// collection as an aggregate `{...}`), so that a store can evaluate it without the context;
    /// nil when a value has no literal form (binary data, a UUID, a decimal with a fraction).
    ///
    /// - Throws: ``ObjectGraphError/Code/notFound`` for a variable without a value, and what
    ///   reading the source object throws.
    public func substitutingVariables(
        in predicate: Predicate, source: ObjectID? = nil, fetchedProperty: FetchedPropertyDescription? = nil,
        variables: [String: AttributeValue] = [:]
    ) throws(ObjectGraphError) -> Predicate? {
        let evaluator = PredicateEvaluator(
            context: self, source: source, fetchedProperty: fetchedProperty, variables: variables)
        return try substitutingVariables(in: predicate, evaluator: evaluator, entity: source?.entity ?? EntityID(1))
    }

    // MARK: - Substitution

    private func substitutingVariables(in predicate: Predicate, evaluator: PredicateEvaluator, entity: EntityID)
        throws(ObjectGraphError) -> Predicate?
    {
        /// Every operand substituted, or nil when one cannot be.
        func substituted(_ operands: [Predicate]) throws(ObjectGraphError) -> [Predicate]? {
            var result: [Predicate] = []
            for operand in operands {
                guard let plain = try substitutingVariables(in: operand, evaluator: evaluator, entity: entity) else {
                    return nil
                }
                result.append(plain)
            }
            return result
        }
        switch predicate {
        case .constant:
            return predicate
        case .and(let operands):
            return try substituted(operands).map(Predicate.and)
        case .or(let operands):
            return try substituted(operands).map(Predicate.or)
        case .not(let operand):
            return try substitutingVariables(in: operand, evaluator: evaluator, entity: entity).map(Predicate.not)
        case .comparison(let lhs, let op, let rhs, let options, let modifier):
            guard let left = try substituting(lhs, evaluator, entity),
                let right = try substituting(rhs, evaluator, entity)
            else { return nil }
            return .comparison(lhs: left, op: op, rhs: right, options: options, modifier: modifier)
        }
    }

    private func substituting(_ expression: Expression, _ evaluator: PredicateEvaluator, _ entity: EntityID)
        throws(ObjectGraphError) -> Expression?
    {
        switch expression {
        case .keyPath, .constant:
            return expression
        case .aggregate(let items):
            var result: [Expression] = []
            for item in items {
                guard let plain = try substituting(item, evaluator, entity) else { return nil }
                result.append(plain)
            }
            return .aggregate(result)
        case .variable:
            // A variable's value does not depend on the evaluated object; any ID will do.
            let anyObject = evaluator.source ?? ObjectID(entity: entity, key: PrimaryKey(0))
            return Self.expression(for: try evaluator.value(of: expression, on: anyObject))
        }
    }

    /// The constant expression that evaluates to `value`; nil when there is none.
    private static func expression(for value: PredicateEvaluator.Value) -> Expression? {
        switch value {
        case .null: return .constant(.null)
        case .string(let s): return .constant(.string(s))
        case .integer(let i): return .constant(.integer(i))
        case .double(let d): return .constant(.double(d))
        case .boolean(let b): return .constant(.boolean(b))
        case .date(let d): return .constant(.date(d))
        case .object(let id): return .constant(.object(id))
        case .decimal(let d):
            // A whole decimal compares as the integer does (exactly); a fraction has no literal.
            var rounded = Decimal()
            var copy = d
            NSDecimalRound(&rounded, &copy, 0, .plain)
            guard rounded == d, let i = Int64(rounded.description) else { return nil }
            return .constant(.integer(i))
        case .data, .uuid: return nil
        case .list(let items):
            var result: [Expression] = []
            for item in items {
                guard let e = expression(for: item) else { return nil }
                result.append(e)
            }
            return .aggregate(result)
        }
    }

    // MARK: - Sorting

    private func sorted(_ ids: [ObjectID], by keys: [SortKey], evaluator: PredicateEvaluator)
        throws(ObjectGraphError) -> [ObjectID]
    {
        try prefetch(ids)
        var rows: [(id: ObjectID, values: [PredicateEvaluator.Value])] = []
        rows.reserveCapacity(ids.count)
        for id in ids {
            var values: [PredicateEvaluator.Value] = []
            for key in keys { values.append(try evaluator.value(of: .keyPath(key.keyPath), on: id)) }
            rows.append((id, values))
        }
        rows.sort { a, b in
            for (index, key) in keys.enumerated() {
                let order = Self.sortOrder(a.values[index], b.values[index])
                if order == .orderedSame { continue }
                return (order == .orderedAscending) == key.ascending
            }
            return a.id.key < b.id.key
        }
        return rows.map(\.id)
    }

    private static func sortOrder(_ a: PredicateEvaluator.Value, _ b: PredicateEvaluator.Value) -> ComparisonResult {
        switch (a, b) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        default: return PredicateEvaluator.order(a, b, []) ?? .orderedSame
        }
    }
}
