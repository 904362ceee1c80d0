#if canImport(Glibc)
    import Glibc
#endif

/// The checks every name from the kernel passes before a filesystem sees it.
///
/// FUSE lets names up to 1,024 bytes through (FUSE_NAME_MAX) and never checks their encoding;
/// Linux filesystems answer ENAMETOOLONG past NAME_MAX (255 bytes), and a filesystem whose names
/// are Swift strings cannot hold bytes that are not UTF-8 (they would be repaired into other
/// names). Both are answered here, once, for every operation.
public enum FileName {
    /// NAME_MAX: the longest name in bytes.
    public static let maximumLength = 255
    /// PATH_MAX - 1: the longest symbolic link target in bytes.
    public static let maximumLinkTargetLength = 4095

    /// What the name is for: naming something that exists (a missing or impossible name is
    /// ENOENT) or a new entry (an impossible name is EINVAL).
    public enum Use: Sendable {
        case existing
        case new
    }

    /// The name as a string: ENAMETOOLONG past ``maximumLength`` bytes; ENOENT (existing) or
    /// EINVAL (new) when it is not UTF-8, empty, or holds a slash.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>, for use: Use) throws(FileSystemError) -> String {
        guard bytes.count <= maximumLength else { throw .nameTooLong }
        guard !bytes.isEmpty, !bytes.contains(UInt8(ascii: "/")), let name = String(validating: bytes, as: UTF8.self)
        else {
            throw use == .existing ? .notFound : .invalid
        }
        return name
    }

    /// A symbolic link's target: ENAMETOOLONG past ``maximumLinkTargetLength`` bytes, EINVAL when
    /// empty or not UTF-8.
    public static func decodeLinkTarget(_ bytes: UnsafeBufferPointer<UInt8>) throws(FileSystemError) -> String {
        guard bytes.count <= maximumLinkTargetLength else { throw .nameTooLong }
        guard !bytes.isEmpty, let target = String(validating: bytes, as: UTF8.self) else { throw .invalid }
        return target
    }

    /// ``decode(_:for:)`` of a NUL-terminated C string.
    static func decode(_ name: UnsafePointer<CChar>?, for use: Use) throws(FileSystemError) -> String {
        guard let name else { throw use == .existing ? .notFound : .invalid }
        let bytes = UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self)
        return try decode(UnsafeBufferPointer(start: bytes, count: strlen(name)), for: use)
    }

    /// An extended attribute's name (the kernel bounds its length at 255): ENODATA (existing) or
    /// EINVAL (new) when it is not UTF-8.
    static func decodeAttributeName(_ name: UnsafePointer<CChar>?, for use: Use) throws(FileSystemError) -> String {
        let failure: FileSystemError = use == .existing ? .noAttribute : .invalid
        guard let name else { throw failure }
        let bytes = UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self)
        guard let decoded = String(validating: UnsafeBufferPointer(start: bytes, count: strlen(name)), as: UTF8.self)
        else {
            throw failure
        }
        return decoded
    }

    static func decodeLinkTarget(_ target: UnsafePointer<CChar>?) throws(FileSystemError) -> String {
        guard let target else { throw .invalid }
        let bytes = UnsafeRawPointer(target).assumingMemoryBound(to: UInt8.self)
        return try decodeLinkTarget(UnsafeBufferPointer(start: bytes, count: strlen(target)))
    }
}
