import Foundation
import FuseKit
import ObjectGraph

/// The files beside a query folder's links, reachable by name and not listed: `.count` (the
/// number of matches and a newline, counted in SQL on SQLite stores without reading a row),
/// `.json` (the matches' records as one JSON document, an array), `.jsonl` (as JSON Lines, one
/// object per line) and `.csv` (with a header row): the bytes `storefs export --entity ENTITY
/// --where PREDICATE --format json|jsonl|csv` writes (``ObjectRecords``).
///
/// Sizes are exact, so the text is made when the file is looked at, and the last few are kept
/// until something changes. The records are made in memory: past ``maximumResultBytes``
/// they are EFBIG (the log says to use `storefs export`, which streams).
struct QueryResultFile: NodeType {
    /// The files' names, by part.
    static let names = [".count", ".json", ".csv", ".jsonl"]
    static let countPart = 0
    static let jsonPart = 1
    static let csvPart = 2
    static let jsonLinesPart = 3
    /// The format of each part that holds records, by part.
    static let formats: [Int: ObjectRecordFormat] = [jsonPart: .json, csvPart: .csv, jsonLinesPart: .jsonLines]
    static let maximumResultBytes = 64 << 20

    var isDirectory: Bool { false }

    private static func part(_ node: Node) -> Int { node.property & (Node.queryFileFlag - 1) }

    private static func folder(of node: Node) -> Node {
        .query(QueryFolder.queryPart, entity: node.entity, index: UInt32(truncatingIfNeeded: node.key.rawValue))
    }

    func parent(of node: Node, in mapping: Mapping) -> Node { Self.folder(of: node) }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        let size = try Self.content(of: node, mapping).count
        // A change drops the kernel's idea of the size (``Mapping/dropFetchedResults()``).
        mapping.queries.shown(node)
        return mapping.make(node, .regularFile, permissions: 0o444, size: size)
    }

    func open(_ node: Node, flags: OpenFlags, in mapping: Mapping) throws(FileSystemError) -> OpenResult {
        if flags.isWriting {
            let name = "\(mapping.describe(Self.folder(of: node)))/\(Self.names[Self.part(node)])"
            mapping.logger.error("open \(name) for writing: a query's results are computed and read-only")
            throw mapping.configuration.readOnly ? .readOnly : .notPermitted
        }
        return try mapping.openFile(node, flags: flags)
    }

    func content(of node: Node, handle: FuseKit.FileHandle, in mapping: Mapping) throws(FileSystemError) -> Data {
        try Self.content(of: node, mapping)
    }

    func remove(_ node: Node, named name: String, from folder: Node, by request: RequestContext, in mapping: Mapping)
        throws(FileSystemError)
    {
        mapping.logger.error("rm \(mapping.describe(folder))/\(name): a query's results are computed and read-only")
        throw .notPermitted
    }

    // MARK: - Content

    static func content(of node: Node, _ mapping: Mapping) throws(FileSystemError) -> Data {
        guard part(node) < names.count else { throw .notFound }
        let generation = mapping.fetchedResults.generation
        if let kept = mapping.queries.file(node, generation: generation) { return kept }
        let folder = folder(of: node)
        let (query, predicate) = try mapping.query(folder)
        let content = try mapping.bounded(folder) { () throws(FileSystemError) -> Data in
            if let format = formats[part(node)] {
                return try records(
                    of: try mapping.queryMembers(of: folder), entity: query.entity, format: format, mapping,
                    name: "\(mapping.describe(folder))/\(names[part(node)])")
            }
            return Data("\(try count(folder, query.entity, predicate, mapping))\n".utf8)
        }
        if mapping.fetchedResults.generation == generation {
            mapping.queries.keep(content, of: node, generation: generation)
        }
        return content
    }

    /// The matches counted: from the folder's kept result when it has one, else by the store.
    private static func count(
        _ folder: Node, _ entity: EntityID, _ predicate: ObjectGraph.Predicate, _ mapping: Mapping
    ) throws(FileSystemError) -> Int {
        if let kept = mapping.fetchedResults.get(folder) { return kept.count }
        let context = mapping.context
        return try mapping.engine(
            { () throws(ObjectGraphError) in
                try context.count(matching: predicate, of: entity, includingSubentities: true)
            }, "count \(mapping.describe(folder))")
    }

    /// The records of `ids`, read a batch at a time: batches start at one record and double up
    /// to 500, never past what the records read so far say is left of ``maximumResultBytes``, and
    /// the result is checked after every record, so large records are never read or written far
    /// past the limit before it answers EFBIG.
    private static func records(
        of ids: [ObjectID], entity: EntityID, format: ObjectRecordFormat, _ mapping: Mapping, name: String
    ) throws(FileSystemError) -> Data {
        let context = mapping.context
        let uuid = try mapping.storeUUID()
        var writer = try mapping.engine(
            { () throws(ObjectGraphError) in
                try ObjectRecords(format: format, model: mapping.model, storeUUID: uuid, entity: entity)
            }, "write \(name)")
        var out: [UInt8] = []
        writer.begin(into: &out)
        var start = 0
        var batchSize = 1
        while start < ids.count {
            // Reading the matches is part of the answer's cost (its time and an interrupt).
            try mapping.engine(
                { () throws(ObjectGraphError) in try QueryBudget.current?.check() }, "read \(name)")
            let batch = Array(ids[start..<min(start + batchSize, ids.count)])
            start += batch.count
            let records = try mapping.engine(
                { () throws(ObjectGraphError) in
                    try context.records(for: batch)
                }, "read \(name)")
            for record in records {
                // Values kept in files are shown as their bytes, within what a result may hold.
                let shown = try mapping.shownRecord(record, limit: max(maximumResultBytes - out.count, 0))
                writer.append(shown, into: &out)
                guard out.count <= maximumResultBytes else {
                    let message =
                        "read \(name): more than \(maximumResultBytes >> 20) MiB; storefs export "
                        + "--entity \(mapping.model[entity].name) --where PREDICATE streams any number of objects"
                    mapping.logger.error("\(message)")
                    throw .tooBig
                }
            }
            let bytesPerRecord = max(out.count / max(start, 1), 1)
            batchSize = max(1, min(batchSize * 2, 500, (maximumResultBytes - out.count) / bytesPerRecord))
        }
        writer.end(into: &out)
        return Data(out)
    }
}
