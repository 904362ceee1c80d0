import Foundation
import FuseKit
import ObjectGraph

/// Writing attribute files: opens, writes into a handle's buffer, and setting the value when the
/// writer is done (flush, release, fsync).
///
/// A write that completes a value (it ends with the newline text values end with) is parsed and
/// checked at once, so `echo abc > hoursPerWeek` fails at write(2), where the shell reports it;
/// text that may still go on is refused at once only when nothing could make it valid, and is
/// otherwise checked when the writer closes or fsyncs.
extension StoreFileSystem {
    func openFile(_ node: Node, flags: OpenFlags) throws(FileSystemError) -> OpenResult {
        if flags.isWriting && configuration.readOnly { throw .readOnly }
        _ = try attributes(of: node)
        let truncating = flags.isWriting && flags.truncates
        let handle = openFiles.open(node, buffer: truncating ? Data() : nil)
        // On a read-write mount every open bypasses the page cache (direct I/O): the kernel keeps
        // one size per file, which a writer's O_TRUNC sets to 0 at once, so a cached reader would
        // read nothing (or half a value) while a writer rewrites the file. Read directly, a reader
        // gets the stored value from storefs until the writer closes. (Read-only mounts have no
        // writers and open files without asking, so the kernel caches their pages.)
        return OpenResult(handle: handle, keepCache: false, directIO: true)
    }

    public func write(_ inode: InodeNumber, handle: FuseKit.FileHandle, offset: UInt64, data: Data) throws(FileSystemError) -> Int {
        guard !configuration.readOnly else { throw .readOnly }
        let node = try node(inode)
        let (end, overflow) = offset.addingReportingOverflow(UInt64(data.count))
        guard !overflow, end <= UInt64(configuration.maximumValueSize) else {
            logger.error("write \(describe(node)): \(end) bytes is more than a value may hold (\(configuration.maximumValueSize) bytes)")
            // The value this write belongs to cannot be held whole: none of it is set.
            if case .attribute = node { openFiles.reject(handle, because: .tooBig) }
            throw .tooBig
        }
        if case .scratch(let serial) = node {
            guard let file = scratch.file(serial), file.linkTarget == nil else { throw .invalid }
            scratch.setContent(serial, Self.splice(data, into: file.content, at: Int(offset)))
            return data.count
        }
        guard let file = openFiles.file(handle), file.node == node else { throw .badHandle }
        // A write that continues a refused value is refused the same way.
        if let rejection = file.rejection, offset != 0 { throw rejection }
        let base = file.rejection != nil ? Data() : try currentContent(of: node, handle: handle)
        let updated = Self.splice(data, into: base, at: Int(offset))
        if case .attribute(let object, let index) = node, Int(offset) + data.count >= base.count {
            // The write reaches the end of the text: what is there so far is judged now.
            do throws(FileSystemError) {
                try checkWrittenText(updated, of: object, index, writtenFrom: Int(offset))
            } catch {
                openFiles.reject(handle, because: error)
                throw error
            }
        }
        openFiles.update(handle) {
            $0.buffer = updated
            $0.dirty = true
            $0.written = true
            $0.rejection = nil
        }
        return data.count
    }

    /// Refuses text written into attribute `index` of `object` that cannot be (or become) its
    /// value: a whole value (a short one ending with its newline, or any one written at once from
    /// offset 0) is parsed and checked; text that may still go on is refused when nothing that
    /// follows could make it valid (`abc` for an integer, bytes that are not UTF-8).
    private func checkWrittenText(_ text: Data, of object: ObjectID, _ index: Int, writtenFrom offset: Int)
        throws(FileSystemError)
    {
        let attribute = model[object.entity].allAttributes[index]
        guard ValueText.isText(attribute.type) else { return }
        // Long strings written piece by piece are checked incrementally, not parsed per piece.
        let isShort = attribute.type != .string || text.count <= 4096
        if text.last == UInt8(ascii: "\n") && (offset == 0 || isShort) {
            _ = try parsedValue(text, for: object, index)
        } else if !ValueText.canBecomeValue(text, type: attribute.type, changedFrom: offset) {
            logger.error(
                "write \(describe(object))/\(attribute.name): the text written cannot become a \(attribute.type.rawValue) value; the value stays as it was")
            throw .invalid
        }
    }

    /// close(2): sets what the handle wrote. A handle only truncated sets nothing yet (the
    /// shell's `>` closes a duplicate descriptor before anything is written through the other),
    /// but when what it holds could not be set, the close says so: `truncate -s 0` of a number
    /// fails here, with the stored value unchanged.
    public func flush(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let file = openFiles.file(handle) else { return }
        if let rejection = file.rejection { throw rejection }
        guard file.dirty, let buffer = file.buffer else { return }
        if file.written {
            try commitBuffer(handle)
        } else if case .attribute(let object, let index) = file.node {
            // Logged at the release, if it still holds this then.
            _ = try parsedValue(buffer, for: object, index, logging: false)
        }
    }

    public func release(_ inode: InodeNumber, handle: FuseKit.FileHandle) throws(FileSystemError) {
        defer { openFiles.close(handle) }
        // Errors of a release reach nobody (close(2) returned at flush): they are logged.
        try? commitBuffer(handle)
    }

    /// Parses a handle's buffered content and sets the attribute; EINVAL (value unchanged) when it
    /// does not parse or validate.
    func commitBuffer(_ handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let (node, content) = openFiles.takeBuffer(handle) else { return }
        let applied = try setContent(content, of: node)
        if let applied { openFiles.update(handle) { $0.applied = applied } }
    }

    /// The value file content sets attribute `index` of `object` to, checked against the attribute
    /// and the store (without setting it): EINVAL with the reason in the log.
    func parsedValue(_ content: Data, for object: ObjectID, _ index: Int, logging: Bool = true) throws(FileSystemError)
        -> AttributeValue
    {
        let attribute = model[object.entity].allAttributes[index]
        let value: AttributeValue
        do {
            value = try ValueText.value(from: content, type: attribute.type)
        } catch {
            if logging { logger.error("write \(describe(object))/\(attribute.name): \(error.message); the value stays as it was") }
            throw .invalid
        }
        do {
            try context.check(value, of: attribute.name, for: object)
        } catch {
            guard logging else { throw mappedError(error) }
            throw fileSystemError(error, "write \(describe(object))/\(attribute.name)", logger: logger)
        }
        return value
    }

    /// Sets the attribute `node` names from file content; returns what was set.
    @discardableResult
    func setContent(_ content: Data, of node: Node) throws(FileSystemError) -> OpenFiles.AppliedValue? {
        guard case .attribute(let object, let index) = node else { return nil }
        let attribute = model[object.entity].allAttributes[index]
        let value = try parsedValue(content, for: object, index)
        let existed = (try? snapshot(of: object))?.attributes[attribute.name] != nil && !isHidden(attribute.name, in: object)
        copyIn.show(attribute.name, in: object)
        removals.unhide(.property(attribute.name), in: object)
        try engine({ () throws(ObjectGraphError) in try context.setValue(value, of: attribute.name, for: object) },
            "write \(describe(object))/\(attribute.name)")
        changed(object)
        invalidate(.attribute(object, index))
        if !existed { invalidate(.object(object)) }
        return OpenFiles.AppliedValue(attribute: attribute.name, value: value)
    }

    // MARK: - Helpers

    /// `data` written into `content` at `offset`, the gap filled with zeros. The caller checked
    /// that the result is within ``StoreFSConfiguration/maximumValueSize``.
    static func splice(_ data: Data, into content: Data, at offset: Int) -> Data {
        var result = content
        if offset > result.count { result.append(Data(count: offset - result.count)) }
        let end = offset + data.count
        if end > result.count { result.append(Data(count: end - result.count)) }
        result.replaceSubrange(result.startIndex + offset..<result.startIndex + end, with: data)
        return result
    }

    static func resize(_ content: Data, to size: Int) -> Data {
        if size <= content.count { return content.prefix(size) }
        return content + Data(count: size - content.count)
    }

    /// A node named for messages.
    func describe(_ node: Node) -> String {
        switch node {
        case .attribute(let object, let index): "\(describe(object))/\(model[object.entity].allAttributes[index].name)"
        case .scratch(let serial): scratch.file(serial).map { "scratch file \($0.name)" } ?? "a scratch file"
        default: "\(node)"
        }
    }
}
