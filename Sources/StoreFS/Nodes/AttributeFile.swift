import Foundation
import FuseKit
import ObjectGraph

/// An attribute's file in an object folder: its value as text (``ValueText``), one trailing
/// newline for text types, raw bytes for binary ones. A nil value has no file.
///
/// Writing buffers per open file; the value is set when the writer closes (or fsyncs), and other
/// readers see the stored value until then. A write that completes a value (it ends with the
/// newline text values end with) is parsed and checked at once, so `echo abc > hoursPerWeek` fails
/// at write(2), where the shell reports it; text that may still go on is refused at once only
/// when nothing could make it valid, and is otherwise checked at close or fsync.
struct AttributeFile: NodeType {
    var isDirectory: Bool { false }

    /// The object's folder, or for a composite's element its composite's folder.
    func parent(of node: Node, in mapping: Mapping) -> Node {
        guard mapping.isValid(node.entity), node.property < mapping.model[node.entity].allAttributes.count else {
            return .object(node.object)
        }
        return mapping.entry(ofAttribute: node.property, of: node.object).folder
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        do throws(FileSystemError) {
            let (attribute, value) = try mapping.attributeValue(node.object, node.property, known: known)
            let size = mapping.fileSize(of: value) ?? ValueText.size(of: value, type: attribute.type)
            return mapping.make(
                node, .regularFile, size: size,
                time: mapping.session.fileTimes.time(of: node.inode))
        } catch {
            // A file made by create has no value until its writer closes it; it exists meanwhile
            // (tools set its times through the descriptor, which the kernel does by inode).
            guard error == .notFound, let size = mapping.session.openFiles.sizeBeingWritten(node) else { throw error }
            return mapping.writtenFileAttributes(node, size: size)
        }
    }

    func extendedAttributes(of node: Node, in mapping: Mapping) throws(FileSystemError) -> [String: Data] {
        let (attribute, _) = try mapping.attributeValue(node.object, node.property)
        var result = [
            "user.attribute.type": Data(attribute.type.rawValue.utf8),
            "user.attribute.optional": Data((attribute.isOptional ? "true" : "false").utf8)
        ]
        if let transformer = attribute.valueTransformerName {
            result["user.attribute.transformer"] = Data(transformer.utf8)
        }
        // Renderings are not listed in the folder: this says which there are.
        let renderings = try RenderingFile.renderings(of: node.object, node.property, mapping)
        if !renderings.isEmpty { result["user.attribute.renderings"] = Data(renderings.joined(separator: ",").utf8) }
        return result
    }

    // MARK: - Reading

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        try mapping.openFile(node, flags: flags)
    }

    /// The handle's buffered new content, or the stored value's text (rendered once per handle,
    /// so that reading a large value piece by piece costs what is read).
    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        let file = handle == .none ? nil : mapping.session.openFiles.file(handle)
        if let file, file.node == node {
            if let buffer = file.buffer { return buffer }
            if let rendered = file.rendered { return rendered }
        }
        let content: Data
        if let file, file.node == node, let valueFile = file.valueFile {
            // What needs the whole value (a write at an offset through another handle) reads it.
            guard valueFile.size <= mapping.configuration.maximumValueSize else { throw .tooBig }
            return try valueFile.read(at: 0, count: valueFile.size)
        }
        if let kept = mapping.renderedValues.kept(node) {
            content = kept
        } else {
            let generation = mapping.renderedValues.generation
            let (attribute, value) = try mapping.attributeValue(node.object, node.property)
            if let whole = try mapping.wholeValue(inFile: value, of: node) { return whole }
            content = mapping.renderedValues.render(node, generation: generation) {
                ValueText.content(of: value, type: attribute.type)
            }
        }
        if let file, file.node == node { mapping.session.openFiles.update(handle) { $0.rendered = content } }
        return content
    }

    func read(_ node: Node, handle: FuseKit.FileHandle, offset: UInt64, size: Int, in mapping: Mapping)
        throws(FileSystemError) -> Data
    {
        // A value in a file is read from it, what is asked for only (when the kernel does not
        // read it itself).
        if handle != .none, let file = mapping.session.openFiles.file(handle), file.node == node,
            let valueFile = file.valueFile
        {
            return try valueFile.read(at: offset, count: min(size, 1 << 24))
        }
        if let valueFile = try mapping.openStoredValueFile(node) {
            return try valueFile.read(at: offset, count: min(size, 1 << 24))
        }
        let content = try content(of: node, handle: handle, in: mapping)
        if offset == 0 { mapping.preloadSiblings(of: node.object, besides: node.property) }
        guard offset < UInt64(content.count), size > 0 else { return Data() }
        let start = content.startIndex + Int(offset)
        return content[start..<(start + min(size, content.endIndex - start))]
    }

    // MARK: - Writing

    func write(_ data: Data, at offset: UInt64, to node: Node, handle: FuseKit.FileHandle, in mapping: Mapping)
        throws(FileSystemError) -> Int
    {
        let openFiles = mapping.session.openFiles
        // Not `openFiles.file(handle)`: a copy of the buffer held here would make the write below
        // copy it whole.
        guard let target = openFiles.writeTarget(handle), target.node == node else { throw .badHandle }
        if target.writesToValueFile {
            return try mapping.writeValueFile(data, at: offset, to: node, handle: handle)
        }
        // A write that continues a refused value is refused the same way.
        if let rejection = target.rejection, offset != 0 { throw rejection }
        // The first write starts the buffer from the stored text (nothing, after a refusal); later
        // ones write into it in place.
        var base: Data? = target.rejection != nil ? Data() : nil
        if base == nil, !target.isBuffered { base = try content(of: node, handle: handle, in: mapping) }
        guard let (sizeBefore, updated) = openFiles.write(handle, data, at: Int(offset), startingFrom: base) else {
            throw .badHandle
        }
        if Int(offset) + data.count >= sizeBefore {
            // The write reaches the end of the text: what is there so far is judged now.
            do throws(FileSystemError) {
                try checkWrittenText(updated, of: node, writtenFrom: Int(offset), in: mapping)
            } catch {
                openFiles.reject(handle, because: error)
                throw error
            }
        }
        openFiles.update(handle) {
            $0.dirty = true
            $0.written = true
            $0.rejection = nil
            $0.attributesShown = false
        }
        return data.count
    }

    /// Refuses text written into the attribute that cannot be (or become) its value: a whole value
    /// (a short one ending with its newline, or any one written at once from offset 0) is parsed
    /// and checked; text that may still go on is refused when nothing that follows could make it
    /// valid (`abc` for an integer, bytes that are not UTF-8).
    private func checkWrittenText(_ text: Data, of node: Node, writtenFrom offset: Int, in mapping: Mapping)
        throws(FileSystemError)
    {
        let attribute = mapping.model[node.entity].allAttributes[node.property]
        guard ValueText.isText(attribute.type) else {
            // JSON kept in a binary value (JSONInBinary): a whole line written at once is judged now.
            if attribute.type == .binaryData, text.last == UInt8(ascii: "\n"), offset == 0, text.count <= 1 << 20 {
                _ = try mapping.parsedValue(text, for: node.object, node.property)
            }
            return
        }
        // Long strings written piece by piece are checked incrementally, not parsed per piece.
        let isShort = attribute.type != .string || text.count <= 4096
        if text.last == UInt8(ascii: "\n") && (offset == 0 || isShort) {
            _ = try mapping.parsedValue(text, for: node.object, node.property)
        } else if !ValueText.canBecomeValue(text, type: attribute.type, changedFrom: offset) {
            mapping.logger.error(
                "write \(mapping.describe(node)): the text written cannot become a \(attribute.type.rawValue) value; the value stays as it was"
            )
            throw .invalid
        }
    }

    func truncate(_ node: Node, to size: Int, handle: FuseKit.FileHandle?, in mapping: Mapping) throws(FileSystemError)
    {
        let openFiles = mapping.session.openFiles
        if let handle, let file = openFiles.file(handle), file.node == node, file.valueFile?.value != nil {
            try mapping.truncateValueFile(handle, node, to: size)
        } else if let handle, let file = openFiles.file(handle), file.node == node {
            let current = file.rejection != nil ? Data() : try content(of: node, handle: handle, in: mapping)
            openFiles.update(handle) {
                $0.buffer = Mapping.resize(current, to: size)
                $0.dirty = true
                $0.rejection = nil
            }
        } else {
            // truncate(1) by path: the new content is the value, now.
            let current = try content(of: node, handle: FuseKit.FileHandle.none, in: mapping)
            try mapping.setContent(Mapping.resize(current, to: size), of: node)
        }
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    { try mapping.removeProperty(node, named: name, by: request) }

    /// An editor's backup (vim renames the file to file~ before writing the new one): the backup
    /// gets a copy, and the attribute keeps its value until the new file is written.
    func rename(_ node: Node, named name: String, to newName: String, in folder: Node, in mapping: Mapping)
        throws(FileSystemError)
    {
        let entity = mapping.model[node.entity]
        let isElement = entity.allAttributes[node.property].composite != nil
        let sibling =
            isElement
            ? mapping.compositeMembers(
                at: String(entity.allAttributes[node.property].name.dropLast(name.count + 1)), of: node.entity
            )
            .elements.contains { $0.name == newName }
            : entity.attribute(named: newName) != nil || entity.relationship(named: newName) != nil
        guard !sibling else {
            mapping.logger.error(
                "mv \(name) \(newName) in \(mapping.describe(folder)): one attribute cannot be renamed onto another; use cp"
            )
            throw .notPermitted
        }
        let scratch = mapping.session.scratch
        if let existing = scratch.named(newName, in: folder) { scratch.remove(existing) }
        let content = try content(of: node, handle: FuseKit.FileHandle.none, in: mapping)
        _ = scratch.create(named: newName, in: folder, content: content)
        mapping.invalidateEntry(parent: folder, name: name)
        mapping.invalidateEntry(parent: folder, name: newName)
        mapping.changed(node.object)
    }

    /// fsync answers for the file: 0 when its value is in the store, the error when it is not. An
    /// error means the value was not saved and never will be: the value the file was given is
    /// taken back (the file shows the stored value again), while the object's other changes stay
    /// pending.
    func fsync(_ node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) {
        let object = node.object
        // A writer that fsyncs a file of a folder a copy made, or that it removed files in, is
        // done with it: it settles now.
        mapping.settleFolders(mapping.session.copyIn.endFreshness(of: object))
        mapping.commit(reason: "fsync", removalsIn: object)
        let attribute = mapping.model[object.entity].allAttributes[node.property].name
        let openFiles = mapping.session.openFiles
        // Checked and taken back under the commit lock: another thread's commit in between would
        // otherwise save the change this fsync then reports as not saved.
        let failure: ObjectGraphError? = mapping.session.commitLock.withLock { _ in
            guard let error = mapping.unsavedError(of: object, attribute: attribute) else { return nil }
            // A change dropped by a conflict is not pending: its reason stays shown (CommitFailures).
            let wasPending = mapping.context.pendingChange(of: object) != nil
            let applied = openFiles.file(handle)?.applied
            let pending = try? mapping.context.value(of: attribute, for: object)
            mapping.context.revert(
                attribute, of: object, ifStill: applied?.attribute == attribute ? applied?.value : pending)
            openFiles.update(handle) { $0.applied = nil }
            // Taken back, the object may change nothing any more: then nothing of it is pending
            // (no reason shown, nothing for the unmount's recovery file).
            if wasPending && mapping.context.pendingChange(of: object) == nil {
                mapping.session.failures.clear([object])
            }
            return error
        }
        guard let error = failure else { return }
        // The file shows the value it had again: a change of its content.
        mapping.session.fileTimes.touch(node.inode)
        mapping.renderedValues.valuesChanged()
        mapping.invalidateRelated([object])
        throw fileSystemError(
            error, "fsync \(mapping.describe(object))/\(attribute): not saved, and taken back", logger: mapping.logger)
    }
}
