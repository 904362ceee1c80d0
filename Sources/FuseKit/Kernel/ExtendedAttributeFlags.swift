/// The flags of `setxattr(2)`.
public struct ExtendedAttributeFlags: OptionSet, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// XATTR_CREATE: fail with EEXIST when the attribute exists.
    public static let create = ExtendedAttributeFlags(rawValue: 1)
    /// XATTR_REPLACE: fail with ENODATA when the attribute does not exist.
    public static let replace = ExtendedAttributeFlags(rawValue: 2)
}
