import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// Files open through the mount, by handle: what each will set when it is flushed, and the
/// content its reader sees.
///
/// A handle's buffer is the writer's alone: other readers keep seeing the stored value until the
/// writer closes (or fsyncs) and the value is set. A reader sees the value as it was at its first
/// read for as long as it keeps the file open, so a value set meanwhile never reaches it half
/// (its later reads would otherwise continue in the new value); and the value is rendered once
/// per open, so reading a large value costs time proportional to what is read.
///
/// Threading: one lock; never calls out while holding it.
final class OpenFiles: Sendable {
    struct OpenFile {
        var node: Node
        /// The new content, once the file was written or truncated through this handle.
        var buffer: Data?
        var dirty = false
        /// Whether data was written through this handle (not only truncated): a flush of a merely
        /// truncated buffer waits for the writes or the release (the shell's `>` closes a
        /// duplicate descriptor before it writes anything).
        var written = false
        /// Why a write through this handle was refused (EINVAL, EFBIG): it holds no value to set
        /// until a write starts a new one at offset 0, and its flush and fsync fail the same way,
        /// so that nothing of a refused value is ever set.
        var rejection: FileSystemError?
        /// The value this handle last set, so that an fsync that cannot save it takes it back.
        var applied: AppliedValue?
        /// The stored value's content as this handle's reader sees it, rendered at the first read.
        var rendered: Data?
        /// On a store other machines write: the value this handle showed when it was opened (and,
        /// after a change through it was set, that value), which a change through it changes.
        var readAs: AttributeValue??
        /// Whether attributes of this handle's file were shown (GETATTR, a lookup, a listing)
        /// since its last write: the kernel may then keep a size or time the set value changes,
        /// and must be told to forget them (``Mapping/setContent(_:of:readAs:keptByKernel:)``).
        var attributesShown = false
        /// The file this handle's reads and writes go to when the value lives in a file
        /// (``ValueFile``): a reader's, the stored value's; a writer's, its new value's.
        var valueFile: ValueFile?
        /// Whether the writer's value file was set as the value: later writes go to a new one.
        var valueFileSet = false
    }

    /// An attribute value set through a handle.
    struct AppliedValue {
        var attribute: String
        var value: AttributeValue?
    }

    private struct State {
        var nextHandle: UInt64 = 1
        var files: [UInt64: OpenFile] = [:]
    }

    private let state = Mutex(State())

    func open(_ node: Node, buffer: Data?) -> FuseKit.FileHandle {
        state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.files[handle] = OpenFile(node: node, buffer: buffer, dirty: buffer != nil)
            return FuseKit.FileHandle(handle)
        }
    }

    func file(_ handle: FuseKit.FileHandle) -> OpenFile? { state.withLock { $0.files[handle.rawValue] } }

    /// Refuses what the handle holds: its buffer goes, and it sets nothing until a write starts a
    /// new value at offset 0.
    func reject(_ handle: FuseKit.FileHandle, because error: FileSystemError) {
        update(handle) {
            $0.buffer = nil
            $0.dirty = false
            $0.written = false
            $0.rendered = nil
            $0.rejection = error
        }
    }

    /// Notes that attributes of `node` are being shown to the kernel (called before they are
    /// made, so that one made before a value is set is noted before that set asks).
    func noteAttributesShown(_ node: Node) {
        state.withLock { state in
            guard !state.files.isEmpty else { return }
            for (handle, file) in state.files where file.node == node && !file.attributesShown {
                state.files[handle]?.attributesShown = true
            }
        }
    }

    /// What a write through `handle` needs to know before it writes, without a copy of the
    /// handle's buffer (a copy held across ``write(_:_:at:startingFrom:)`` would make it copy the
    /// whole buffer).
    struct WriteTarget {
        var node: Node
        var writesToValueFile: Bool
        var rejection: FileSystemError?
        var isBuffered: Bool
    }

    func writeTarget(_ handle: FuseKit.FileHandle) -> WriteTarget? {
        state.withLock { state in
            state.files[handle.rawValue].map {
                WriteTarget(
                    node: $0.node, writesToValueFile: $0.valueFile?.value != nil, rejection: $0.rejection,
                    isBuffered: $0.buffer != nil)
            }
        }
    }

    /// Writes `data` at `offset` into the handle's buffer in place, the buffer started from
    /// `base` when the handle has none (or is given one). The buffer's one reference is taken out
    /// of the table while it is written, so a write costs what it writes, amortized, and a value
    /// written 128 KiB at a time costs linear, not quadratic, time. Returns the buffer's size
    /// before the write and its content after it (for the caller's checks), nil when the handle
    /// is gone.
    func write(_ handle: FuseKit.FileHandle, _ data: Data, at offset: Int, startingFrom base: Data?)
        -> (sizeBefore: Int, content: Data)?
    {
        state.withLock { state in
            guard var file = state.files[handle.rawValue] else { return nil }
            var buffer = base ?? file.buffer ?? Data()
            file.buffer = nil
            state.files[handle.rawValue]?.buffer = nil
            let sizeBefore = buffer.count
            Mapping.splice(data, into: &buffer, at: offset)
            file.buffer = buffer
            state.files[handle.rawValue] = file
            return (sizeBefore, buffer)
        }
    }

    func update(_ handle: FuseKit.FileHandle, _ change: (inout OpenFile) -> Void) {
        state.withLock { state in
            guard var file = state.files[handle.rawValue] else { return }
            change(&file)
            state.files[handle.rawValue] = file
        }
    }

    @discardableResult
    func close(_ handle: FuseKit.FileHandle) -> OpenFile? {
        state.withLock { $0.files.removeValue(forKey: handle.rawValue) }
    }

    /// The size of what a writer holds for `node` when the file has no stored value yet (a new
    /// file being written): nil when nobody is writing it.
    func sizeBeingWritten(_ node: Node) -> Int? {
        state.withLock { state in
            guard let file = state.files.values.first(where: { $0.node == node && $0.dirty }) else { return nil }
            if let valueFile = file.valueFile, valueFile.value != nil { return valueFile.size }
            return file.buffer?.count
        }
    }

    /// Takes the handle's dirty buffer to be set (clearing it), or nil when there is none.
    func takeBuffer(_ handle: FuseKit.FileHandle) -> (Node, Data)? {
        state.withLock { state in
            guard var file = state.files[handle.rawValue], file.dirty, file.rejection == nil, let content = file.buffer
            else {
                return nil
            }
            file.dirty = false
            file.written = false
            file.buffer = nil
            file.rendered = nil
            state.files[handle.rawValue] = file
            return (file.node, content)
        }
    }
}
