import Foundation

/// The checks Core Data makes on values before it saves them: type, optionality, range, length,
/// relationship counts. Messages name the object, the property and what was wrong.
enum Validator {
    /// A kind of value that breaks its model (``problem(of:for:)``).
    enum ValueProblem: String, Sendable {
        /// nil where the property is not optional.
        case missing = "nil"
        /// A number outside its type's width or the model's minimum and maximum (a string's or
        /// data's length outside them).
        case outOfRange = "range"
        /// A value of another type than the attribute's.
        case wrongType = "type"
        /// A to-many count outside the model's minimum and maximum.
        case count
    }

    static func check(
        _ value: AttributeValue?, for attribute: AttributeDescription, in entity: EntityDescription,
        object: @autoclosure () -> String? = nil
    ) throws(ObjectGraphError) {
        // Built only for a message: checking every value of a bulk insert made it per value.
        var subject: String { "\(object() ?? entity.name).\(attribute.name)" }
        guard let value else {
            // A composite's element is judged with the composite's other elements, at save
            // (``EntityDescription/mayBeNil(_:isNil:)``): `rm -r` of an optional composite takes
            // its elements one by one.
            if !attribute.isOptional && !attribute.isTransient && attribute.composite == nil {
                throw ObjectGraphError(.validation, "\(subject) is not optional and cannot be nil")
            }
            return
        }
        guard value.matches(attribute.type) else {
            throw ObjectGraphError(.validation, "\(subject) holds \(attribute.type.rawValue) values, not \(value)")
        }
        if case .integer(let i) = value, let range = attribute.type.integerRange, !range.contains(i) {
            throw ObjectGraphError(
                .validation,
                "\(subject) is an \(attribute.type.rawValue) attribute: \(i) is outside "
                    + "\(range.lowerBound)...\(range.upperBound)")
        }
        if let min = attribute.minValue, let order = compare(value, min), order < 0 {
            throw ObjectGraphError(.validation, "\(subject): \(describe(value)) is below the minimum \(describe(min))")
        }
        if let max = attribute.maxValue, let order = compare(value, max), order > 0 {
            throw ObjectGraphError(.validation, "\(subject): \(describe(value)) is above the maximum \(describe(max))")
        }
    }

    /// What is wrong with `value` for `attribute`, by kind, without a message: the checks of
    /// ``check(_:for:in:object:)`` for a reader of many stored values (`storefs doctor`).
    static func problem(of value: AttributeValue?, for attribute: AttributeDescription) -> ValueProblem? {
        guard let value else { return !attribute.isOptional && !attribute.isTransient ? .missing : nil }
        guard value.matches(attribute.type) else { return .wrongType }
        if case .integer(let i) = value, let range = attribute.type.integerRange, !range.contains(i) {
            return .outOfRange
        }
        if let min = attribute.minValue, let order = compare(value, min), order < 0 { return .outOfRange }
        if let max = attribute.maxValue, let order = compare(value, max), order > 0 { return .outOfRange }
        return nil
    }

    /// Whether `count` destinations break `relationship`'s optionality or its minimum and maximum
    /// counts (the checks of ``check(count:for:object:)``).
    static func problem(count: Int, for relationship: RelationshipDescription) -> ValueProblem? {
        if !relationship.isToMany { return count == 0 && !relationship.isOptional ? .missing : nil }
        let tooFew = relationship.minCount > 0 && count < relationship.minCount
        let tooMany = relationship.maxCount > 0 && count > relationship.maxCount
        return tooFew || tooMany ? .count : nil
    }

    static func check(count: Int, for relationship: RelationshipDescription, object: @autoclosure () -> String)
        throws(ObjectGraphError)
    {
        // A to-many is judged by its counts alone: Core Data and SwiftData save an object whose
        // non-optional to-many is empty when its minimum count is 0 (docs/SEMANTICS.md).
        if count == 0 && !relationship.isToMany {
            if !relationship.isOptional {
                throw ObjectGraphError(
                    .validation, "\(object()).\(relationship.name) is not optional and cannot be empty")
            }
            return
        }
        if relationship.isToMany {
            if relationship.minCount > 0 && count < relationship.minCount {
                throw ObjectGraphError(
                    .validation,
                    "\(object()).\(relationship.name) needs at least \(relationship.minCount) objects, has \(count)")
            }
            if relationship.maxCount > 0 && count > relationship.maxCount {
                throw ObjectGraphError(
                    .validation,
                    "\(object()).\(relationship.name) holds at most \(relationship.maxCount) objects, has \(count)")
            }
        }
    }

    /// Compares a value with a bound: numbers and dates by value, strings by length in characters
    /// and binary data by length in bytes (Core Data's min/max length). nil when incomparable.
    private static func compare(_ value: AttributeValue, _ bound: AttributeValue) -> Int? {
        func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }
        let boundNumber: Double? =
            switch bound {
            case .integer(let b): Double(b)
            case .double(let b): b
            case .float(let b): Double(b)
            case .decimal(let b): (DecimalConversion.double(b) ?? 0)
            case .string(let b): Double(b)
            default: nil
            }
        switch value {
        case .integer(let v): return boundNumber.map { sign(Double(v), $0) }
        case .double(let v): return boundNumber.map { sign(v, $0) }
        case .float(let v): return boundNumber.map { sign(Double(v), $0) }
        case .decimal(let v):
            if case .decimal(let b) = bound { return sign(v, b) }
            return boundNumber.map { sign((Double(v.description) ?? 0), $0) }
        case .string(let s): return boundNumber.map { sign(Double(s.count), $0) }
        // A value kept in a file is judged by its writer, who knows its size
        // (``AttributeDescription/lengthProblem(ofBytes:)``), not by its reference's length.
        case .data(let d):
            return FileBackedValue(reference: d) != nil ? nil : boundNumber.map { sign(Double(d.count), $0) }
        case .date(let d):
            if case .date(let b) = bound { return sign(d, b) }
            return boundNumber.map { sign(d.timeIntervalSinceReferenceDate, $0) }
        default: return nil
        }
    }

    private static func describe(_ value: AttributeValue) -> String {
        switch value {
        case .integer(let v): "\(v)"
        case .double(let v): "\(v)"
        case .float(let v): "\(v)"
        case .decimal(let v): "\(v)"
        case .string(let s): "a string of \(s.count) characters"
        case .data(let d): "\(d.count) bytes"
        case .date(let d): "\(d)"
        case .boolean(let b): "\(b)"
        case .uuid(let u): u.uuidString
        }
    }
}

extension AttributeDescription {
    /// Why a binary value of `byteCount` bytes breaks this attribute's minimum or maximum length
    /// (Core Data's, as ``Validator`` checks values in memory), nil when it does not: for a value
    /// kept in a file (``FileBackedValue``), whose size only the file says.
    public func lengthProblem(ofBytes byteCount: Int) -> String? {
        let value = AttributeValue.integer(Int64(byteCount))
        if let min = minValue, let order = Validator.compareLength(value, min), order < 0 {
            return "\(name): \(byteCount) bytes is below the minimum \(Validator.describeBound(min))"
        }
        if let max = maxValue, let order = Validator.compareLength(value, max), order > 0 {
            return "\(name): \(byteCount) bytes is above the maximum \(Validator.describeBound(max))"
        }
        return nil
    }
}

extension Validator {
    /// A length (as an integer) against a bound, as ``compare(_:_:)`` compares data's length.
    static func compareLength(_ length: AttributeValue, _ bound: AttributeValue) -> Int? { compare(length, bound) }

    static func describeBound(_ bound: AttributeValue) -> String { describe(bound) }
}
