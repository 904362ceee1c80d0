import Foundation
import FuseKit
import ObjectGraph

/// Setting attribute values from file content: open files and their buffers, parsing and
/// checking, and setting the value when the writer is done (flush, release, fsync).
extension Mapping {
    /// Opens an attribute or scratch file for reading or writing.
    func openFile(_ node: Node, flags: OpenFlags) throws(FileSystemError) -> OpenResult {
        if flags.isWriting && configuration.readOnly { throw .readOnly }
        _ = try attributes(of: node)
        let truncating = flags.isWriting && flags.truncates
        let handle = session.openFiles.open(node, buffer: truncating ? Data() : nil)
        if flags.isWriting { rememberWhatItShows(handle, node) }
        // A value that lives in a file: a writer writes a new file, a reader reads the stored one,
        // through the kernel where it can (FUSE passthrough).
        do throws(FileSystemError) {
            if flags.isWriting {
                try startValueFile(handle, node, truncating: truncating)
            } else if let file = try openStoredValueFile(node) {
                session.openFiles.update(handle) { $0.valueFile = file }
                return OpenResult(handle: handle, directIO: true, needsFlush: false, backingFile: file.descriptor)
            }
        } catch {
            session.openFiles.close(handle)
            throw error
        }
        // On a read-write mount every open bypasses the page cache (direct I/O): the kernel keeps
        // one size per file, which a writer's O_TRUNC sets to 0 at once, so a cached reader would
        // read nothing (or half a value) while a writer rewrites the file. Read directly, a reader
        // gets the stored value from storefs until the writer closes. (Read-only mounts have no
        // writers and open files without asking, so the kernel caches their pages.)
        // A reader's close has nothing to set: no FLUSH is asked for it (FOPEN_NOFLUSH).
        return OpenResult(handle: handle, keepCache: false, directIO: true, needsFlush: flags.isWriting)
    }

    /// An attribute's file a create made: one that had no value is new, and its time is now. One
    /// that has a value keeps its time until the new value is set (vim makes its file anew after
    /// renaming it to a backup, and its value is the old one until vim closes it).
    func noteCreated(_ node: Node) {
        if (try? attributeValue(node.object, node.property)) == nil { session.fileTimes.touch(node.inode) }
    }

    /// The attributes of an attribute file a writer is writing: its buffer's size.
    func writtenFileAttributes(_ node: Node, size: Int) -> FileAttributes {
        session.openFiles.noteAttributesShown(node)
        return make(node, .regularFile, size: size, time: session.fileTimes.time(of: node.inode))
    }

    /// close(2): sets what the handle wrote. A handle only truncated sets nothing yet (the
    /// shell's `>` closes a duplicate descriptor before anything is written through the other),
    /// but when what it holds could not be set, the close says so: `truncate -s 0` of a number
    /// fails here, with the stored value unchanged.
    func flush(_ handle: FuseKit.FileHandle) throws(FileSystemError) {
        guard let file = session.openFiles.file(handle) else { return }
        if let rejection = file.rejection { throw rejection }
        if file.valueFile?.value != nil {
            // A value file only truncated is set at the release, as a buffer is.
            guard file.dirty, file.written else { return }
            try commitBuffer(handle)
            try commitOnClose(file.node, handle: handle)
            return
        }
        guard file.dirty, let buffer = file.buffer else { return }
        if file.written {
            try commitBuffer(handle)
            try commitOnClose(file.node, handle: handle)
        } else if file.node.kind == .attribute {
            // Logged at the release, if it still holds this then.
            _ = try parsedValue(buffer, for: file.node.object, file.node.property, logging: false)
        }
    }

    /// Parses a handle's buffered content and sets the attribute; EINVAL (value unchanged) when it
    /// does not parse or validate.
    func commitBuffer(_ handle: FuseKit.FileHandle) throws(FileSystemError) {
        if try commitValueFile(handle) { return }
        let readAs = session.openFiles.file(handle)?.readAs
        guard let (node, content) = session.openFiles.takeBuffer(handle) else { return }
        let applied = try setContent(content, of: node, readAs: readAs, keptByKernel: handle)
        if let applied {
            session.openFiles.update(handle) {
                $0.applied = applied
                if $0.readAs != nil { $0.readAs = .some(applied.value) }
            }
        }
    }

    /// The value file content sets attribute `index` of `object` to, checked against the attribute
    /// and the store (without setting it): EINVAL with the reason in the log.
    func parsedValue(_ content: Data, for object: ObjectID, _ index: Int, logging: Bool = true) throws(FileSystemError)
        -> AttributeValue
    {
        let attribute = model[object.entity].allAttributes[index]
        var value: AttributeValue
        do {
            value = try ValueText.value(from: content, type: attribute.type)
            if attribute.type == .binaryData,
                let json = try JSONInBinary.value(
                    content, replacing: (try? context.savedValue(of: attribute.name, for: object)) ?? nil)
            {
                value = .data(json)
            }
        } catch {
            if logging {
                logger.error("write \(describe(object))/\(attribute.name): \(error.message); the value stays as it was")
            }
            throw .invalid
        }
        do {
            try context.check(value, of: attribute.name, for: object)
        } catch {
            if error.code == .exists, !error.objects.isEmpty {
                session.failures.refuse(error.objects, because: error.message)
            }
            guard logging else { throw mappedError(error) }
            throw fileSystemError(error, "write \(describe(object))/\(attribute.name)", logger: logger)
        }
        return value
    }

    /// Sets the attribute `node` names from file content; returns what was set.
    @discardableResult
    /// `readAs`: on a store other machines write, the value the writer's handle showed, which
    /// this change is a change of (``ObjectContext/setValue(_:of:for:readAs:)``).
    /// `keptByKernel`: the writer's handle whose buffer `content` is, which the kernel holds as the
    /// file. When the value reads back as exactly those bytes and no attributes of the file were
    /// shown since its last write, the kernel's view is already right (its size from the writes;
    /// its time it asks for after any write) and is not dropped: a dropped inode costs a GETATTR
    /// and a `security.capability` GETXATTR at the next write (issue 40; scripts/bench/writes.sh
    /// counts them).
    func setContent(
        _ content: Data, of node: Node, readAs: AttributeValue?? = nil, keptByKernel: FuseKit.FileHandle? = nil
    ) throws(FileSystemError)
        -> OpenFiles.AppliedValue?
    {
        guard node.kind == .attribute else { return nil }
        let value = try parsedValue(content, for: node.object, node.property)
        return try setValue(value, of: node, readAs: readAs, keptByKernel: keptByKernel.map { ($0, content) })
    }

    /// Sets the attribute `node` names to `value`, checked; returns what was set. `keptByKernel`:
    /// the writer's handle and the content the kernel holds as the file
    /// (``setContent(_:of:readAs:keptByKernel:)``).
    func setValue(
        _ value: AttributeValue, of node: Node, readAs: AttributeValue?? = nil,
        keptByKernel: (handle: FuseKit.FileHandle, content: Data)? = nil
    ) throws(FileSystemError)
        -> OpenFiles.AppliedValue?
    {
        guard node.kind == .attribute else { return nil }
        let object = node.object
        let attribute = model[object.entity].allAttributes[node.property]
        let existed =
            (try? snapshot(of: object))?.attributes[attribute.name] != nil && !isHidden(attribute.name, in: object)
        session.copyIn.show(attribute.name, in: object)
        session.removals.unhide(.property(attribute.name), in: object)
        try engine(
            { () throws(ObjectGraphError) in
                if let readAs {
                    try context.setValue(value, of: attribute.name, for: object, readAs: readAs)
                } else {
                    try context.setValue(value, of: attribute.name, for: object)
                }
            }, "write \(describe(object))/\(attribute.name)")
        // The file's own time moves, not its siblings' (``FileTimes``).
        session.fileTimes.touch(node.inode)
        changed(object)
        // Asked after the value is set: attributes made before it (the old value's) were noted
        // before they were made.
        if let kept = keptByKernel, session.openFiles.file(kept.handle)?.attributesShown == false,
            ValueText.content(of: value, type: attribute.type) == kept.content
        {
            // The kernel's view is the file as written.
        } else {
            invalidate(node)
        }
        invalidateRenderings(of: object, node.property)
        if !existed { invalidate(.object(object)) }
        return OpenFiles.AppliedValue(attribute: attribute.name, value: value)
    }

    /// Why `object`'s change (of `attribute`, or any) is not saved after a commit; nil when it is.
    func unsavedError(of object: ObjectID, attribute: String?) -> ObjectGraphError? {
        if let pending = context.pendingChange(of: object) {
            let concerned = attribute.map { pending.kind != .updated || pending.attributes.keys.contains($0) } ?? true
            guard concerned else { return nil }
            return pending.failure
                ?? ObjectGraphError(.io, session.failures.storeReason ?? "the change could not be saved")
        }
        return session.failures.takeDropped(of: object)?.failure
    }

    // MARK: - Content

    /// `data` written into `content` at `offset`, the gap filled with zeros. The caller checked
    /// that the result is within ``StoreFSConfiguration/maximumValueSize``. In place: when
    /// `content`'s storage is not shared, a write costs what it writes (appends grow the storage
    /// geometrically), not a copy of everything before it.
    static func splice(_ data: Data, into content: inout Data, at offset: Int) {
        let end = offset + data.count
        if offset == content.count {
            content.append(data)
            return
        }
        if end > content.count { content.append(Data(count: end - content.count)) }
        content.replaceSubrange(content.startIndex + offset..<content.startIndex + end, with: data)
    }

    static func resize(_ content: Data, to size: Int) -> Data {
        if size <= content.count { return content.prefix(size) }
        return content + Data(count: size - content.count)
    }
}
