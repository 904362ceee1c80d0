import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads an extended attribute of a path, for commands that ask a mount (`storefs overlay
/// export`). Swift's Glibc module leaves out `<sys/xattr.h>`; the C library's getxattr is found
/// by name and called with C's calling convention.
enum ExtendedAttribute {
    private typealias GetFunction =
        @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int

    private static let get: GetFunction? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getxattr") else { return nil }
        return unsafeBitCast(symbol, to: GetFunction.self)
    }()

    /// The value of `name` at `path` (following a symlink), or the errno that refused it.
    static func value(_ name: String, at path: String) -> Result<Data, POSIXError> {
        guard let get else { return .failure(POSIXError(.ENOSYS)) }
        var capacity = 4096
        // Grows once if the value is larger (an extended attribute holds at most 64 KiB).
        for _ in 0..<2 {
            var buffer = [UInt8](repeating: 0, count: capacity)
            let length = buffer.withUnsafeMutableBytes { get(path, name, $0.baseAddress, capacity) }
            if length >= 0 { return .success(Data(buffer.prefix(length))) }
            guard errno == ERANGE else { return .failure(POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
            capacity = 65536
        }
        return .failure(POSIXError(.ERANGE))
    }
}
