import Foundation
import FuseKit
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

/// An open descriptor of the file that holds an attribute's value (``FileBackedValue``): a
/// reader's, which the kernel reads itself where FUSE passthrough is available, or a writer's,
/// the new file its writes go to.
///
/// Threading: immutable; the descriptor is closed when the last open file holding it goes.
final class ValueFile: Sendable {
    let descriptor: Int32
    /// For a writer: the value its file becomes when set; nil for a reader.
    let value: FileBackedValue?

    init(descriptor: Int32, value: FileBackedValue?) {
        self.descriptor = descriptor
        self.value = value
    }

    deinit { close(descriptor) }

    var size: Int {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Up to `count` bytes from `offset`.
    func read(at offset: UInt64, count: Int) throws(FileSystemError) -> Data {
        guard count > 0, offset <= UInt64(Int64.max) else { return Data() }
        var data = Data(count: count)
        var total = 0
        let failure: Int32 = data.withUnsafeMutableBytes { buffer in
            while total < count {
                let n = pread(descriptor, buffer.baseAddress! + total, count - total, off_t(offset) + off_t(total))
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return errno }
                if n == 0 { break }
                total += n
            }
            return 0
        }
        guard failure == 0 else { throw FileSystemError(rawValue: failure) }
        return data.prefix(total)
    }

    func write(_ data: Data, at offset: UInt64) throws(FileSystemError) {
        let failure: Int32 = data.withUnsafeBytes { buffer in
            var written = 0
            while written < buffer.count {
                let n = pwrite(
                    descriptor, buffer.baseAddress! + written, buffer.count - written, off_t(offset) + off_t(written))
                if n < 0 && errno == EINTR { continue }
                if n < 0 { return errno }
                if n == 0 { return ENOSPC }
                written += n
            }
            return 0
        }
        guard failure == 0 else { throw FileSystemError(rawValue: failure) }
    }

    /// The first `count` bytes of `source` (all of it when nil) copied in, a MiB at a time.
    func copy(from source: Int32, count: Int? = nil) throws(FileSystemError) {
        var status = stat()
        guard fstat(source, &status) == 0 else { throw FileSystemError(rawValue: errno) }
        let total = min(Int(status.st_size), count ?? Int.max)
        let reader = ValueFile(descriptor: dup(source), value: nil)
        var offset = 0
        while offset < total {
            let piece = try reader.read(at: UInt64(offset), count: min(total - offset, 1 << 20))
            guard !piece.isEmpty else { break }
            try write(piece, at: UInt64(offset))
            offset += piece.count
        }
    }
}

/// Attributes whose store keeps large values in files (``FileBackedValueStore``; SQLite's
/// "Allows External Storage"): a writer writes straight into a new file of the store's, which
/// becomes the value when the writer closes (and the save that sets it commits), with no
/// ``StoreFSConfiguration/maximumValueSize`` and nothing of it held in memory; a reader reads the
/// value's file (through the kernel, where FUSE passthrough is available). Values no larger than
/// the store's threshold are set in the row, as Core Data keeps them.
extension Mapping {
    var fileBackedStore: (any FileBackedValueStore)? { coordinator.store as? any FileBackedValueStore }

    /// The store's threshold when `node` is an attribute whose large values live in files.
    func valueFileThreshold(_ node: Node) -> Int? {
        guard node.kind == .attribute, !configuration.readOnly, let store = fileBackedStore, isValid(node.entity),
            node.property < model[node.entity].allAttributes.count
        else { return nil }
        return store.fileThreshold(for: model[node.entity].allAttributes[node.property])
    }

    /// The file that holds `value`, when it is one kept in a file.
    func file(of value: AttributeValue?) -> String? {
        guard let fileValue = FileBackedValue(value), let store = fileBackedStore else { return nil }
        return store.currentFile(of: fileValue)
    }

    /// The size of a value kept in a file.
    func fileSize(of value: AttributeValue?) -> Int? {
        guard let path = file(of: value) else { return nil }
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// Whether `node` is an attribute whose store may keep its values in files: read from there
    /// on read-write and read-only mounts alike.
    func mayReadValueFromFile(_ node: Node) -> Bool {
        guard node.kind == .attribute, let store = fileBackedStore, isValid(node.entity),
            node.property < model[node.entity].allAttributes.count
        else { return false }
        return store.fileThreshold(for: model[node.entity].allAttributes[node.property]) != nil
    }

    /// A reader's descriptor of the file that holds `node`'s value, nil when it is not in a file.
    func openStoredValueFile(_ node: Node) throws(FileSystemError) -> ValueFile? {
        // Only attributes whose store keeps values in files: other opens and reads pay nothing.
        guard mayReadValueFromFile(node), let (_, value) = try? attributeValue(node.object, node.property),
            let path = file(of: value)
        else { return nil }
        // A regular file only, opened without waiting (a FIFO put there would block).
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            logger.error(
                "read \(describe(node)): its value's file \(path) cannot be opened: \(String(cString: strerror(errno)))"
            )
            throw .io
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw .io
        }
        return ValueFile(descriptor: descriptor, value: nil)
    }

    /// A whole value kept in a file, for what needs it in memory (an editor's backup, a truncate
    /// by path): EFBIG past ``StoreFSConfiguration/maximumValueSize``.
    func wholeValue(inFile value: AttributeValue, of node: Node) throws(FileSystemError) -> Data? {
        guard let path = file(of: value) else { return nil }
        var status = stat()
        guard stat(path, &status) == 0 else { throw .io }
        guard Int(status.st_size) <= configuration.maximumValueSize else {
            logger.error(
                "\(describe(node)): its value (\(status.st_size) bytes, in \(path)) is more than max_value_size to hold in memory"
            )
            throw .tooBig
        }
        guard let file = try openStoredValueFile(node) else { return nil }
        return try file.read(at: 0, count: Int(status.st_size))
    }

    /// A writer's new value file for `handle`, holding `node`'s current content unless
    /// `truncating` (or the first `keeping` bytes of it); nothing when the attribute keeps its
    /// values in the row.
    func startValueFile(_ handle: FuseKit.FileHandle, _ node: Node, truncating: Bool, keeping: Int? = nil)
        throws(FileSystemError)
    {
        guard valueFileThreshold(node) != nil, let store = fileBackedStore else { return }
        let attribute = model[node.entity].allAttributes[node.property]
        let (path, value) = try engine(
            { () throws(ObjectGraphError) in try store.newValueFile(for: attribute) },
            "write \(describe(node))")
        let descriptor = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            store.discardValueFile(value)
            throw FileSystemError(rawValue: errno)
        }
        let file = ValueFile(descriptor: descriptor, value: value)
        let previous = session.openFiles.file(handle)
        do throws(FileSystemError) {
            if !truncating {
                if let old = previous?.valueFile {
                    try file.copy(from: old.descriptor, count: keeping)
                } else if let stored = try openStoredValueFile(node) {
                    try file.copy(from: stored.descriptor, count: keeping)
                } else if let (attribute, current) = try? attributeValue(node.object, node.property) {
                    let content = ValueText.content(of: current, type: attribute.type)
                    try file.write(keeping.map { content.prefix($0) } ?? content, at: 0)
                }
            }
        } catch {
            store.discardValueFile(value)
            throw error
        }
        let replaced = previous?.valueFile
        let replacedWasSet = previous?.valueFileSet ?? false
        session.openFiles.update(handle) {
            $0.valueFile = file
            $0.valueFileSet = false
            $0.buffer = nil
            $0.rendered = nil
            if truncating { $0.dirty = true }
        }
        if let old = replaced?.value, !replacedWasSet { store.discardValueFile(old) }
    }

    /// A write through a handle whose writes go to a value file: the file a value was set from
    /// is not written again (the value set stays as it was), a new one continues it.
    func writeValueFile(_ data: Data, at offset: UInt64, to node: Node, handle: FuseKit.FileHandle)
        throws(FileSystemError) -> Int
    {
        guard let file = session.openFiles.file(handle), file.node == node, file.valueFile?.value != nil else {
            throw .badHandle
        }
        // A write that continues a refused value is refused the same way; one at offset 0 starts
        // a new value.
        if let rejection = file.rejection, offset != 0 { throw rejection }
        if file.valueFileSet { try startValueFile(handle, node, truncating: file.rejection != nil) }
        guard let valueFile = session.openFiles.file(handle)?.valueFile else { throw .badHandle }
        if file.rejection != nil && !file.valueFileSet { _ = ftruncate(valueFile.descriptor, 0) }
        let (_, overflow) = offset.addingReportingOverflow(UInt64(data.count))
        guard !overflow, offset <= UInt64(Int64.max) - UInt64(data.count) else { throw .tooBig }
        do throws(FileSystemError) {
            try valueFile.write(data, at: offset)
        } catch {
            // Part of the value may be in the file: nothing of it is set, and close and fsync
            // fail the same way (ENOSPC of a full disk reaches the writer here first).
            logger.error(
                "write \(describe(node)): \(String(cString: strerror(error.rawValue))); the value stays as it was")
            session.openFiles.reject(handle, because: error)
            throw error
        }
        session.openFiles.update(handle) {
            $0.dirty = true
            $0.written = true
            $0.rejection = nil
        }
        return data.count
    }

    /// ftruncate through a writer's handle.
    func truncateValueFile(_ handle: FuseKit.FileHandle, _ node: Node, to size: Int) throws(FileSystemError) {
        guard let file = session.openFiles.file(handle), file.valueFile?.value != nil else { throw .badHandle }
        if file.valueFileSet { try startValueFile(handle, node, truncating: false, keeping: size) }
        guard let valueFile = session.openFiles.file(handle)?.valueFile else { throw .badHandle }
        guard ftruncate(valueFile.descriptor, off_t(size)) == 0 else { throw FileSystemError(rawValue: errno) }
        session.openFiles.update(handle) { $0.dirty = true }
    }

    /// Sets what a writer wrote into its value file: in the row when it is no larger than the
    /// store's threshold, otherwise the file itself. Whether the handle writes to a value file
    /// (the caller has nothing more to do then).
    func commitValueFile(_ handle: FuseKit.FileHandle) throws(FileSystemError) -> Bool {
        guard let file = session.openFiles.file(handle), let valueFile = file.valueFile,
            let value = valueFile.value
        else { return false }
        guard file.dirty, file.rejection == nil else { return true }
        session.openFiles.update(handle) {
            $0.dirty = false
            $0.written = false
        }
        let node = file.node
        let size = valueFile.size
        guard let threshold = valueFileThreshold(node), size > threshold else {
            let content = try valueFile.read(at: 0, count: size)
            let applied = try setContent(content, of: node, readAs: file.readAs)
            noteApplied(applied, handle)
            return true
        }
        let attribute = model[node.entity].allAttributes[node.property]
        // The model's min/max length, which the engine cannot judge from the value's reference.
        if let problem = attribute.lengthProblem(ofBytes: size) {
            try engine(
                { () throws(ObjectGraphError) in throw ObjectGraphError(.validation, problem) },
                "set \(describe(node))")
        }
        let previous = FileBackedValue(try? context.value(of: attribute.name, for: node.object))
        let applied = try setValue(.data(value.reference), of: node, readAs: file.readAs)
        session.openFiles.update(handle) { $0.valueFileSet = true }
        noteApplied(applied, handle)
        // A value written before and never saved is replaced: its file goes.
        if let previous, previous != value, let store = fileBackedStore,
            store.currentFile(of: previous) != previous.path
        {
            store.discardValueFile(previous)
        }
        return true
    }

    private func noteApplied(_ applied: OpenFiles.AppliedValue?, _ handle: FuseKit.FileHandle) {
        guard let applied else { return }
        session.openFiles.update(handle) {
            $0.applied = applied
            if $0.readAs != nil { $0.readAs = .some(applied.value) }
        }
    }

    /// A released writer's file that never became the value goes.
    func releaseValueFile(_ file: OpenFiles.OpenFile) {
        guard let value = file.valueFile?.value, !file.valueFileSet else { return }
        fileBackedStore?.discardValueFile(value)
    }
}
