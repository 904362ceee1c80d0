import Digest
import Foundation

/// Core Data's version hashes: the 32 bytes per entity that a store's metadata records
/// (`NSStoreModelVersionHashes`) and that Core Data compares with a model's before it opens the
/// store, plus the digest and checksum of the whole set that newer stores carry.
///
/// Apple documents what a hash covers, not how it is computed; the byte layout below was worked
/// out from the corpus stores, which carry both Core Data's hashes and the compiled model they
/// were computed from (docs/MODELS.md has the derivation, the evidence and the framework versions
/// it holds for). Every piece is appended without separators; strings are UTF-8, counts and type
/// codes 32-bit little-endian:
///
/// - property base = SHA-256(name · flags · versionHashModifier), flags a 16-bit little-endian
///   word: 1 optional, 2 transient, 4 read-only
/// - attribute = SHA-256(base · attributeType code · [1 if external storage] · [1 if kept in
///   history after deletion])
/// - derived attribute = SHA-256(its derivation as NSExpression prints it · its filtering
///   predicate, if any): nothing else of the attribute counts (storefs models no filtering
///   predicate; the decoder notes one)
/// - relationship = SHA-256(base · destination entity name · inverse name (none when the
///   relationship is its own inverse) · maxCount · minCount · [1, 0 if ordered])
/// - composite attribute = SHA-256(its elements' hashes in element-name order)
/// - entity = SHA-256(name · isAbstract (one byte) · [parent's hash] · the hashes of its
///   persistent properties, inherited ones included, in name order · versionHashModifier · its
///   uniqueness constraints, each joined with ".", sorted, empty ones left out)
///
/// Transient properties and fetched properties (always transient) do not count, nor do class
/// names, user info, delete rules, indexes, defaults, validation or renaming identifiers.
/// Stateless; safe from any thread.
public enum VersionHash {
    /// The hash of every entity of `model`, by entity name.
    public static func entityHashes(of model: ManagedObjectModel) -> [String: Data] {
        var cache: [EntityID: Data] = [:]
        var result: [String: Data] = [:]
        for entity in model.entities {
            result[entity.name] = hash(of: entity.id, in: model, cache: &cache)
        }
        return result
    }

    /// The hash of one entity.
    public static func hash(of entity: EntityID, in model: ManagedObjectModel) -> Data {
        var cache: [EntityID: Data] = [:]
        return hash(of: entity, in: model, cache: &cache)
    }

    /// `NSStoreModelVersionHashesDigest`: SHA-512 over each entity's name followed by its hash, in
    /// name order. Core Data stores it base64-encoded.
    public static func digest(of hashes: [String: Data]) -> Data {
        var message = Data()
        for name in sortedNames(hashes.keys) {
            message.append(contentsOf: Array(name.utf8))
            message.append(hashes[name] ?? Data())
        }
        return SHA512.hash(message)
    }

    /// `NSStoreModelVersionChecksumKey`: SHA-256 over the hashes alone, in entity name order. Core
    /// Data stores it base64-encoded.
    public static func checksum(of hashes: [String: Data]) -> Data {
        var message = Data()
        for name in sortedNames(hashes.keys) { message.append(hashes[name] ?? Data()) }
        return SHA256.hash(message)
    }

    /// The bookkeeping keys Core Data writes into a new store's metadata for `model`: the hashes,
    /// their version (3), digest and checksum, and the model's version identifiers.
    public static func metadata(for model: ManagedObjectModel) -> [String: MetadataValue] {
        let hashes = entityHashes(of: model)
        return [
            "NSStoreModelVersionHashes": .dictionary(hashes.mapValues(MetadataValue.data)),
            "NSStoreModelVersionHashesVersion": .integer(3),
            // Newer Core Data (framework 1044 and later) also records a digest and a checksum of
            // the hash set; an app's Core Data compares the hashes themselves.
            "NSStoreModelVersionHashesDigest": .string(digest(of: hashes).base64EncodedString()),
            "NSStoreModelVersionChecksumKey": .string(checksum(of: hashes).base64EncodedString()),
            "NSStoreModelVersionIdentifiers": .array([.string(model.versionIdentifier ?? "")])
        ]
    }

    // MARK: - Pieces

    private static func hash(of id: EntityID, in model: ManagedObjectModel, cache: inout [EntityID: Data]) -> Data {
        if let known = cache[id] { return known }
        let entity = model[id]
        var message = Data(entity.name.utf8)
        message.append(entity.isAbstract ? 1 : 0)
        // The model's initializer refuses inheritance cycles, so this recursion ends.
        if let parent = entity.parentID { message.append(hash(of: parent, in: model, cache: &cache)) }
        var properties: [(name: String, hash: Data)] = []
        for attribute in entity.allAttributes where !attribute.isTransient && attribute.composite == nil {
            properties.append((attribute.name, hash(of: attribute)))
        }
        for composite in entity.allComposites where !composite.isTransient {
            properties.append((composite.name, hash(of: composite)))
        }
        for relationship in entity.allRelationships where !relationship.isTransient {
            properties.append((relationship.name, hash(of: relationship, from: id, in: model)))
        }
        properties.sort { precedes($0.name, $1.name) }
        for property in properties { message.append(property.hash) }
        message.append(contentsOf: Array((entity.versionHashModifier ?? "").utf8))
        for constraint in sortedNames(entity.uniquenessConstraints.map { $0.joined(separator: ".") })
        where !constraint.isEmpty {
            message.append(contentsOf: Array(constraint.utf8))
        }
        let digest = SHA256.hash(message)
        cache[id] = digest
        return digest
    }

    private static func hash(of attribute: AttributeDescription) -> Data {
        // Core Data computes the attribute's own hash for a derived attribute too, then hashes
        // only the derivation: SampleModel2's Book and GraphicNovel match only this way.
        if let derivation = attribute.derivationExpression {
            return SHA256.hash(Data(expressionFormat(ofDerivation: derivation).utf8))
        }
        var message = base(
            name: attribute.name, isOptional: attribute.isOptional, isTransient: attribute.isTransient,
            modifier: attribute.versionHashModifier)
        append(Int32(truncatingIfNeeded: attribute.type.coreDataCode), to: &message)
        if attribute.allowsExternalBinaryDataStorage { message.append(1) }
        if attribute.preservesValueInHistoryOnDeletion { message.append(1) }
        return SHA256.hash(message)
    }

    /// A composite's hash is SHA-256 of its elements' hashes in element-name order (a nested
    /// composite's by this same rule): the composite's own name, optionality and modifier do not
    /// count, as for a derived attribute. Found on SwiftData's MetaCocktails store (framework
    /// 1414), whose 11 composites make 3 of its 4 entities hash exactly only this way.
    private static func hash(of composite: CompositeAttributeDescription) -> Data {
        var elements: [(name: String, hash: Data)] = []
        for element in composite.elements {
            switch element {
            case .attribute(let attribute): elements.append((attribute.name, hash(of: attribute)))
            case .composite(let inner): elements.append((inner.name, hash(of: inner)))
            }
        }
        elements.sort { precedes($0.name, $1.name) }
        var message = Data()
        for element in elements { message.append(element.hash) }
        return SHA256.hash(message)
    }

    private static func hash(
        of relationship: RelationshipDescription, from entity: EntityID, in model: ManagedObjectModel
    )
        -> Data
    {
        var message = base(
            name: relationship.name, isOptional: relationship.isOptional, isTransient: relationship.isTransient,
            modifier: relationship.versionHashModifier)
        message.append(contentsOf: Array(relationship.destinationEntityName.utf8))
        if let inverse = relationship.inverseName,
            !isOwnInverse(relationship, inverse: inverse, from: entity, in: model)
        {
            message.append(contentsOf: Array(inverse.utf8))
        }
        append(Int32(truncatingIfNeeded: relationship.maxCount), to: &message)
        append(Int32(truncatingIfNeeded: relationship.minCount), to: &message)
        if relationship.isOrdered { message.append(contentsOf: [1, 0]) }
        return SHA256.hash(message)
    }

    /// SHA-256(name · flags · versionHashModifier): the part every property shares. The flags are
    /// one 16-bit little-endian word (1 optional, 2 transient, 4 read-only); storefs models no
    /// read-only property but derived attributes, whose hash does not use this part.
    private static func base(name: String, isOptional: Bool, isTransient: Bool, modifier: String?) -> Data {
        var message = Data(name.utf8)
        let flags: UInt16 = (isOptional ? 1 : 0) | (isTransient ? 2 : 0)
        message.append(UInt8(truncatingIfNeeded: flags))
        message.append(UInt8(truncatingIfNeeded: flags >> 8))
        message.append(contentsOf: Array((modifier ?? "").utf8))
        return SHA256.hash(message)
    }

    /// A reflexive relationship (`mergeCandidates` ↔ `mergeCandidates` on one entity): Core Data
    /// leaves the inverse's name out of its hash (Photos.sqlite's Person entity shows it).
    private static func isOwnInverse(
        _ relationship: RelationshipDescription, inverse: String, from entity: EntityID, in model: ManagedObjectModel
    ) -> Bool {
        guard inverse == relationship.name else { return false }
        // The entity that declares it: a subentity hashes its parent's relationships too.
        var declaring = entity
        while let parent = model[declaring].parentID,
            !model[declaring].relationships.contains(where: { $0.name == relationship.name })
        {
            declaring = parent
        }
        return model[declaring].name == relationship.destinationEntityName
    }

    /// A derivation as NSExpression's `predicateFormat` prints it. Core Data turns a key path that
    /// ends in `@count` or `@sum` into the function (`pages.@count` becomes `count:(pages)`) when
    /// the attribute is given it, so Xcode's and the archive's spellings hash alike; functions
    /// print as their selector and arguments (`now()`, `lowercase:(name)`), key paths as themselves.
    static func expressionFormat(ofDerivation text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        for (suffix, function) in [(".@count", "count:"), (".@sum", "sum:")] where trimmed.hasSuffix(suffix) {
            let path = trimmed.dropLast(suffix.count)
            let isKeyPath =
                !path.isEmpty
                && path.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
                    !part.isEmpty
                        && part.unicodeScalars.allSatisfy { $0 == "_" || CharacterSet.alphanumerics.contains($0) }
                }
            if isKeyPath { return "\(function)(\(path))" }
        }
        return trimmed
    }

    private static func append(_ value: Int32, to message: inout Data) {
        let bits = UInt32(bitPattern: value)
        for shift in stride(from: 0, through: 24, by: 8) {
            message.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift)))
        }
    }

    /// Names in the order of their Unicode scalars, as Core Data sorts them (the corpus agrees
    /// for every entity and property; none differs from byte order there).
    private static func sortedNames<S: Sequence>(_ names: S) -> [String] where S.Element == String {
        names.sorted(by: precedes)
    }

    private static func precedes(_ a: String, _ b: String) -> Bool {
        a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
    }
}
