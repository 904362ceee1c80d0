import Foundation

/// An attribute of an entity: its name, type and the constraints Core Data checks on save.
public struct AttributeDescription: Sendable, Hashable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    /// Transient attributes live in memory only: stores never see them.
    public var isTransient: Bool
    public var defaultValue: AttributeValue?
    /// Minimum value for numbers and dates, minimum length for strings and binary data.
    public var minValue: AttributeValue?
    /// Maximum value for numbers and dates, maximum length for strings and binary data.
    public var maxValue: AttributeValue?
    public var allowsExternalBinaryDataStorage: Bool
    /// The value transformer of a transformable attribute (nil: Core Data's default transformer).
    public var valueTransformerName: String?
    public var userInfo: [String: String]
    /// Xcode's `elementID` (Core Data's renaming identifier).
    public var renamingIdentifier: String?
    public var versionHashModifier: String?
    /// Xcode's `preserveAfterDeletion` (Core Data's `preservesValueInHistoryOnDeletion`): the value
    /// stays in persistent history after the object is deleted. It is part of the version hash.
    public var preservesValueInHistoryOnDeletion: Bool
    /// The class of a transformable attribute's values (Xcode's `customClassName`), kept for export.
    public var valueClassName: String?
    /// A derived attribute's expression (Xcode's `derivationExpression`): Core Data computes the
    /// value in the store, so it is read, never written.
    public var derivationExpression: String?
    /// For an element of a composite attribute (flattened by the model, named by its key path
    /// `author.person`): the name of the entity's composite that holds it; nil otherwise.
    public var composite: String?

    public init(
        name: String, type: AttributeType, isOptional: Bool = true, isTransient: Bool = false,
        defaultValue: AttributeValue? = nil, minValue: AttributeValue? = nil,
        maxValue: AttributeValue? = nil, allowsExternalBinaryDataStorage: Bool = false,
        valueTransformerName: String? = nil, userInfo: [String: String] = [:],
        renamingIdentifier: String? = nil, versionHashModifier: String? = nil,
        preservesValueInHistoryOnDeletion: Bool = false, valueClassName: String? = nil,
        derivationExpression: String? = nil
    ) {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.valueTransformerName = valueTransformerName
        self.userInfo = userInfo
        self.renamingIdentifier = renamingIdentifier
        self.versionHashModifier = versionHashModifier
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.valueClassName = valueClassName
        self.derivationExpression = derivationExpression
    }
}
