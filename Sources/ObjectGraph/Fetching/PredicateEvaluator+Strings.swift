import Foundation

extension PredicateEvaluator {
    /// Whether `text op[options] pattern` holds for two strings, exactly as predicate evaluation
    /// decides it.
    ///
    /// Stores that evaluate predicates themselves call this for the string operators their query
    /// language cannot do with the same semantics (`[c]`/`[d]` folding, `LIKE`, `MATCHES`,
    /// grapheme-aware `BEGINSWITH`/`CONTAINS`), so that both paths give the same objects.
    ///
    /// - Throws: ``ObjectGraphError/Code/invalidModel`` for a `MATCHES` pattern that is not a valid
    ///   regular expression; ``ObjectGraphError/Code/unsupported`` for `BETWEEN`, which needs two
    ///   bounds.
    public static func compareStrings(
        _ text: String, _ op: ComparisonOperator, _ pattern: String, options: ComparisonOptions = []
    ) throws(ObjectGraphError) -> Bool {
        let left = Value.string(text)
        let right = Value.string(pattern)
        switch op {
        case .equal: return equal(left, right, options)
        case .notEqual: return !equal(left, right, options)
        case .less: return order(left, right, options) == .orderedAscending
        case .lessOrEqual: return [.orderedAscending, .orderedSame].contains(order(left, right, options))
        case .greater: return order(left, right, options) == .orderedDescending
        case .greaterOrEqual: return [.orderedDescending, .orderedSame].contains(order(left, right, options))
        case .in:
            // `text IN pattern`: a substring test, `pattern` being the haystack.
            guard !text.isEmpty else { return false }
            return fold(pattern, options).contains(fold(text, options))
        case .contains:
            guard !pattern.isEmpty else { return false }
            return fold(text, options).contains(fold(pattern, options))
        case .beginsWith, .endsWith:
            guard !pattern.isEmpty else { return false }
            let t = fold(text, options)
            let p = fold(pattern, options)
            return op == .beginsWith ? t.hasPrefix(p) : t.hasSuffix(p)
        case .like:
            return like(Array(fold(text, options)), Array(fold(pattern, options)))
        case .matches:
            return try matches(text, pattern, options)
        case .between:
            throw ObjectGraphError(.unsupported, "BETWEEN compares with two bounds, not one string")
        }
    }

    /// Whether `pattern` is a regular expression `MATCHES` accepts.
    public static func isValidRegularExpression(_ pattern: String) -> Bool {
        (try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z")) != nil
    }
}
