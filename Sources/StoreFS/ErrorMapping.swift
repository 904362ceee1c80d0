import FuseKit
import Logging
import ObjectGraph

/// Maps engine errors to the errno a user sees, and logs the reason: the one place where that
/// happens, so `dmesg`-less users find out why in the log.
func fileSystemError(_ error: ObjectGraphError, _ operation: String, logger: Logger) -> FileSystemError {
    let errno = mappedError(error)
    if error.code == .notFound {
        // Shells and editors look up names that do not exist all the time: trace, not debug.
        logger.trace("\(operation): \(error.message)")
    } else if error.code == .cancelled {
        // The reader was interrupted or killed: what it asked for is not an error of the store.
        logger.debug("\(operation): \(error.message)")
    } else {
        logger.error("\(operation): \(error.message)")
    }
    return errno
}

/// The errno of an engine error, where the reason is logged elsewhere (or later).
func mappedError(_ error: ObjectGraphError) -> FileSystemError {
    switch error.code {
    case .notFound: .notFound
    case .validation: .invalid
    case .conflict: .busy
    case .deleteDenied, .notPermitted: .notPermitted
    case .readOnly: .readOnly
    case .exists: .exists
    case .busy: .busy
    case .unsupported: .notSupported
    case .timedOut: .timedOut
    case .limitExceeded: .tooBig
    case .cancelled: .interrupted
    case .io: .io
    case .noSpace: .noSpace
    case .corruptStore, .invalidModel: .io
    default: .io
    }
}
