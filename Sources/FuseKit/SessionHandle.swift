import CFuse

/// A `struct fuse_session *` that may cross threads.
struct SessionHandle: @unchecked Sendable {  // libfuse's notify and exit calls are thread-safe.
    let raw: OpaquePointer
}
