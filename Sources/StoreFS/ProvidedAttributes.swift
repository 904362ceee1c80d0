import Foundation
import FuseKit

/// Read-only extended attributes of the mount root that the program serving the mount adds to
/// the store's metadata: evidence mounts add `user.storefs.evidence` (what was read, with its
/// SHA-256) and `user.storefs.overlay` (the overlay's changes) this way, so the mapping needs no
/// knowledge of evidence.
///
/// A listed attribute shows in `getfattr -d`; one that is not listed is read by name only (for
/// values whose reading costs something or has an effect, as writing a file). Setting or
/// removing one is EPERM, as for every `user.storefs.` name.
///
/// Threading: immutable; values are computed on the FUSE thread that asks, so they may be called
/// concurrently. Compared by identity (a configuration holds one).
public final class ProvidedAttributes: Sendable, Hashable {
    public struct Attribute: Sendable {
        public var listed: Bool
        public var value: @Sendable () throws(FileSystemError) -> Data

        public init(listed: Bool, value: @escaping @Sendable () throws(FileSystemError) -> Data) {
            self.listed = listed
            self.value = value
        }
    }

    private let attributes: [String: Attribute]

    /// `attributes` by full name (`user.storefs.evidence`).
    public init(_ attributes: [String: Attribute]) { self.attributes = attributes }

    var listedNames: [String] { attributes.filter(\.value.listed).keys.sorted() }

    func contains(_ name: String) -> Bool { attributes[name] != nil }

    /// The attribute's value; nil when this is not one of them.
    func value(of name: String) throws(FileSystemError) -> Data? {
        guard let attribute = attributes[name] else { return nil }
        return try attribute.value()
    }

    public static func == (a: ProvidedAttributes, b: ProvidedAttributes) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
