/// Why a ``FuseSession`` could not be created, mounted or run, in words a user can act on.
public struct FuseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong and, where known, what to do about it.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
