/// The flags of `renameat2(2)`.
public struct RenameFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// RENAME_NOREPLACE: fail with EEXIST rather than replace the new name.
    public static let noReplace = RenameFlags(rawValue: 1)
    /// RENAME_EXCHANGE: swap the two names.
    public static let exchange = RenameFlags(rawValue: 2)
    /// RENAME_WHITEOUT: leave a whiteout (overlayfs) at the old name.
    public static let whiteout = RenameFlags(rawValue: 4)
}
