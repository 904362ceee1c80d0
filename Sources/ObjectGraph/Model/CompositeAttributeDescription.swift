/// A composite attribute (Core Data's `NSCompositeAttributeDescription`, attribute type 2100,
/// iOS 17 and macOS 14): a named group of attributes stored inline in the entity's table, one
/// column per element. SwiftData keeps a `Codable` struct property this way (`var author: Author`
/// with `person`, `place`, `year` gives the columns ZPERSON, ZPLACE, ZYEAR). An element is an
/// attribute or, nested, another composite.
///
/// The engine does not treat a composite as one value: a model flattens each composite into its
/// leaf elements (``flattenedElements(prefix:)``), which the entity lists among its attributes
/// under their namespaced key paths (`author.person`), marked with ``AttributeDescription/composite``.
/// Stores, values, validation, history, export and predicates then handle them as the attributes
/// they are stored as; the composite itself is kept for what is said of it as a whole: its
/// optionality, its version hash, and how a model file spells it.
public struct CompositeAttributeDescription: Sendable, Hashable {
    /// One element: an attribute, or a composite nested inside this one.
    public enum Element: Sendable, Hashable {
        case attribute(AttributeDescription)
        case composite(CompositeAttributeDescription)

        public var name: String {
            switch self {
            case .attribute(let a): a.name
            case .composite(let c): c.name
            }
        }
    }

    public var name: String
    public var isOptional: Bool
    public var isTransient: Bool
    /// In declaration order (the order Core Data gives their columns).
    public var elements: [Element]
    public var userInfo: [String: String]
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    /// The name of the composite type in an Xcode model (`<composite name="Author">`); compiled
    /// models do not keep it.
    public var typeName: String?

    /// How deep composites may nest: a model may come from a file.
    public static let maximumDepth = 16

    public init(
        name: String, isOptional: Bool = true, isTransient: Bool = false, elements: [Element],
        userInfo: [String: String] = [:], renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        typeName: String? = nil
    ) {
        self.name = name
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.elements = elements
        self.userInfo = userInfo
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.typeName = typeName
    }

    /// The leaf attributes, depth first in declaration order, each named by its key path from the
    /// entity (`author.person`, `a.b.c`) and marked with the top-level composite's name.
    public func flattenedElements(prefix: String? = nil, top: String? = nil) -> [AttributeDescription] {
        let path = prefix.map { "\($0).\(name)" } ?? name
        let owner = top ?? name
        var result: [AttributeDescription] = []
        for element in elements {
            switch element {
            case .attribute(var leaf):
                leaf.name = "\(path).\(leaf.name)"
                leaf.composite = owner
                leaf.isTransient = leaf.isTransient || isTransient
                result.append(leaf)
            case .composite(let inner):
                var nested = inner
                nested.isTransient = inner.isTransient || isTransient
                result += nested.flattenedElements(prefix: path, top: owner)
            }
        }
        return result
    }

    /// Every composite below this one (itself included), each with its key path, parents first.
    public func folders(prefix: String? = nil) -> [(path: String, composite: CompositeAttributeDescription)] {
        let path = prefix.map { "\($0).\(name)" } ?? name
        var result = [(path, self)]
        for case .composite(let inner) in elements { result += inner.folders(prefix: path) }
        return result
    }

    /// How deep this composite nests (1 for one without nested composites).
    public var depth: Int {
        var deepest = 0
        for case .composite(let inner) in elements { deepest = max(deepest, inner.depth) }
        return deepest + 1
    }
}

extension AttributeDescription {
    /// The element's own name, the last part of its key path (`person` of `author.person`).
    public var elementName: Substring {
        guard composite != nil, let dot = name.lastIndex(of: ".") else { return name[...] }
        return name[name.index(after: dot)...]
    }
}

extension EntityDescription {
    /// When `components[index]` names one of the entity's composites, the element's key path that
    /// the components from there spell (`author`, `person` gives `author.person`, as Core Data's
    /// namespaced key paths do) and the index after them; nil otherwise, or when they stop at a
    /// composite (a composite as a whole is no value a predicate compares).
    public func compositeElement(in components: ArraySlice<String>, at index: Int) -> (key: String, next: Int)? {
        guard index < components.endIndex, !allComposites.isEmpty, composite(named: components[index]) != nil else {
            return nil
        }
        var key = components[index]
        var next = index + 1
        while next < components.endIndex {
            key += "." + components[next]
            next += 1
            if let attribute = attribute(named: key), attribute.composite != nil { return (key, next) }
            guard compositePaths.contains(key) else { return nil }
        }
        return nil
    }
}

extension EntityDescription {
    /// The composite at key path `path` (`author`, `a.b`), nested ones included.
    public func composite(atPath path: String) -> CompositeAttributeDescription? {
        let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, var current = composite(named: first) else { return nil }
        for part in parts.dropFirst() {
            var next: CompositeAttributeDescription?
            for case .composite(let inner) in current.elements where inner.name == part { next = inner }
            guard let found = next else { return nil }
            current = found
        }
        return current
    }

    /// Whether element `attribute` (a composite's leaf) may be nil in an object whose values are
    /// `isNil`'s: where it is optional, or where an optional composite holding it has no value at
    /// all (every element nil), which is that composite being nil. Core Data validates a
    /// composite's elements only when the composite has a value.
    public func mayBeNil(_ attribute: AttributeDescription, isNil: (String) -> Bool) -> Bool {
        if attribute.isOptional || attribute.isTransient { return true }
        var path = Substring(attribute.name)
        while let dot = path.lastIndex(of: ".") {
            path = path[..<dot]
            let prefix = String(path) + "."
            if let composite = composite(atPath: String(path)), composite.isOptional,
                allAttributes.allSatisfy({ !$0.name.hasPrefix(prefix) || isNil($0.name) })
            {
                return true
            }
        }
        return false
    }
}
