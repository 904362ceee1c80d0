import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An error of the engine or of a store: what kind of failure, and a message for the user.
///
/// The message says what was wrong and, where there is one, what to do; the filesystem maps the
/// code to an errno in one place.
public struct ObjectGraphError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A model file or model definition is malformed or inconsistent.
        public static let invalidModel = Code(rawValue: "invalid model")
        /// A value does not fit its attribute or relationship (type, range, optionality, count).
        public static let validation = Code(rawValue: "validation failed")
        /// The record changed in the store since this context read it (optimistic locking).
        public static let conflict = Code(rawValue: "conflict")
        /// A Deny delete rule refused a delete.
        public static let deleteDenied = Code(rawValue: "delete denied")
        /// An object, entity or property that does not exist.
        public static let notFound = Code(rawValue: "not found")
        /// A store file that cannot be read as its type: truncated, corrupt, not a store.
        public static let corruptStore = Code(rawValue: "corrupt store")
        /// An operation the store or engine does not support.
        public static let unsupported = Code(rawValue: "unsupported")
        /// The store is read-only.
        public static let readOnly = Code(rawValue: "read-only")
        /// An input/output failure below the store (permission denied, a lost connection).
        public static let io = Code(rawValue: "i/o error")
        /// The disk (or the server's) has no room for what a save writes: nothing was written, and
        /// the save can succeed once room is made. The filesystem answers ENOSPC, as for any file.
        public static let noSpace = Code(rawValue: "no space left")
        /// An object or key that already exists.
        public static let exists = Code(rawValue: "already exists")
        /// The store is in use by another writer.
        public static let busy = Code(rawValue: "in use")
        /// A change the store does not allow to anyone, such as setting a value it computes itself
        /// (a derived attribute its triggers maintain).
        public static let notPermitted = Code(rawValue: "not permitted")
        /// A query passed its time limit (``QueryLimits/time``).
        public static let timedOut = Code(rawValue: "timed out")
        /// A query visited more rows or held more memory than its limits allow (``QueryLimits``).
        public static let limitExceeded = Code(rawValue: "limit exceeded")
        /// A query was stopped because the request it answered was interrupted (``QueryBudget/cancel()``).
        public static let cancelled = Code(rawValue: "cancelled")
    }

    public var code: Code
    public var message: String
    /// The objects the failure is about, when it is about particular ones (a conflict, a key that
    /// exists, a value that fails validation): a partial save leaves them pending and saves the rest.
    public var objects: [ObjectID]

    public init(_ code: Code, _ message: String, objects: [ObjectID] = []) {
        self.code = code
        self.message = message
        self.objects = objects
    }

    public var description: String { "\(code): \(message)" }

    /// The error of a system call that failed with `errno` while writing: ``Code/noSpace`` for a
    /// full disk or quota (ENOSPC, EDQUOT), which the filesystem answers as such, else
    /// ``Code/io``. `message` says what failed; the system's reason is appended.
    public static func writing(_ message: String, errno code: Int32) -> ObjectGraphError {
        ObjectGraphError(
            code == ENOSPC || code == EDQUOT ? .noSpace : .io, "\(message): \(String(cString: strerror(code)))")
    }
}
