import Decoding
import Foundation
import AtomicStore
import ObjectGraph

/// The parsed content of a Core Data XML store file, before it is matched to a model.
struct XMLStoreDocument {
    struct RawAttribute {
        var name: String
        var type: String
        var text: String
    }

    struct RawRelationship {
        var name: String
        var type: String
        var destination: String
        var idrefs: [String]
    }

    struct RawObject {
        var type: String
        var id: String
        var line: Int
        var attributes: [RawAttribute] = []
        var relationships: [RawRelationship] = []
    }

    var version: String?
    var uuid: String?
    var nextObjectID: String?
    var metadata: [String: MetadataValue] = [:]
    var objects: [RawObject] = []
    /// Lines in the file (counted only when a load reports progress).
    var lineCount = 0
}

/// Reads Core Data XML store files: the header (for metadata) and the objects.
///
/// Every malformed input gives ``ObjectGraphError/Code/corruptStore`` naming the file and, where
/// there is one, the line.
enum XMLStoreReader {
    // MARK: - Header

    /// The header of the store at `url`, read from the start of the file: `<databaseInfo>` comes
    /// before the objects, and reading a store of a gigabyte whole for it took a second. The
    /// prefix grows until it holds `</databaseInfo>` or is the whole file.
    static func header(at url: URL) throws(ObjectGraphError) -> XMLStoreDocument {
        var length = 1 << 20
        while true {
            let (data, isWhole) = try AtomicFile.readPrefix(url, maxLength: length)
            if isWhole || range(of: "</databaseInfo>", in: data) != nil { return try header(of: data, path: url.path) }
            length = length > Int.max / 8 ? Int.max - 1 : length * 8
        }
    }

    /// The `<databaseInfo>` values and metadata, found by a byte scan (no full parse).
    static func header(of data: Data, path: String) throws(ObjectGraphError) -> XMLStoreDocument {
        var doc = XMLStoreDocument()
        guard let databaseInfo = range(of: "<databaseInfo>", in: data),
            range(of: "<database>", in: data) != nil || range(of: "<database ", in: data) != nil
        else {
            throw ObjectGraphError(
                .corruptStore, "\(path): not a Core Data XML store (no <database> and <databaseInfo>)")
        }
        guard let infoEnd = range(of: "</databaseInfo>", in: data, from: databaseInfo.upperBound) else {
            throw ObjectGraphError(.corruptStore, "\(path): <databaseInfo> is not closed (truncated file?)")
        }
        func element(_ name: String) -> String? {
            guard let open = range(of: "<\(name)>", in: data, from: databaseInfo.upperBound),
                open.upperBound <= infoEnd.lowerBound,
                let close = range(of: "</\(name)>", in: data, from: open.upperBound),
                close.upperBound <= infoEnd.lowerBound
            else { return nil }
            return String(decoding: data[open.upperBound..<close.lowerBound], as: UTF8.self)
        }
        doc.version = element("version")
        doc.uuid = element("UUID")?.trimmingCharacters(in: .whitespacesAndNewlines)
        doc.nextObjectID = element("nextObjectID")
        if let open = range(of: "<metadata>", in: data, from: databaseInfo.upperBound),
            open.upperBound <= infoEnd.lowerBound,
            let close = range(of: "</metadata>", in: data, from: open.upperBound)
        {
            let body = data[open.upperBound..<close.lowerBound]
            if body.contains(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D) }) {
                // The bounded reader: a store's bytes never reach PropertyListSerialization.
                for (key, value) in try StoredPropertyList.dictionary(Data(body), source: "\(path): <metadata>") {
                    doc.metadata[key] = value
                }
            }
        }
        if let version = doc.version?.trimmingCharacters(in: .whitespacesAndNewlines),
            version != XMLStoreWriter.formatVersion
        {
            throw ObjectGraphError(
                .corruptStore,
                "\(path): unsupported XML store version \(version) (storefs reads \(XMLStoreWriter.formatVersion))")
        }
        return doc
    }

    /// The first `needle` at or after `start`, searched in the bytes in place (memchr for its first
    /// byte, memcmp for the rest): Data's own `range(of:in:)` went through NSData and copied the
    /// whole file on every call (a fifth of opening a large XML store, twice over with the
    /// metadata read first).
    private static func range(of needle: String, in data: Data, from start: Data.Index? = nil) -> Range<Data.Index>? {
        let needle = Array(needle.utf8)
        let from = start ?? data.startIndex
        guard let first = needle.first, from >= data.startIndex, from <= data.endIndex else { return nil }
        return data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Range<Data.Index>? in
            needle.withUnsafeBytes { (wanted: UnsafeRawBufferPointer) -> Range<Data.Index>? in
                guard let base = bytes.baseAddress, let wantedBase = wanted.baseAddress else { return nil }
                let last = bytes.count - wanted.count  // the last offset a match can start at
                var offset = from - data.startIndex
                while offset <= last {
                    guard let hit = memchr(base + offset, CInt(first), last - offset + 1) else { return nil }
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, wantedBase, wanted.count) == 0 {
                        return (data.startIndex + at)..<(data.startIndex + at + wanted.count)
                    }
                    offset = at + 1
                }
                return nil
            }
        }
    }

    // MARK: - Objects

    /// Parses the whole file.
    static func document(of data: Data, path: String, progress: LoadProgress? = nil) throws(ObjectGraphError)
        -> XMLStoreDocument
    {
        var doc = try header(of: data, path: path)
        try XMLInputCheck.requireUTF8(data, source: path, code: .corruptStore)
        var collector = ObjectCollector()
        if let progress {
            doc.lineCount = data.reduce(into: 1) { count, byte in if byte == 0x0A { count += 1 } }
            collector.progress = (progress, doc.lineCount)
        }
        do {
            try XMLScanner.scan(data, into: &collector)
        } catch {
            throw ObjectGraphError(.corruptStore, "\(path): line \(error.line): \(error.message)")
        }
        guard collector.sawDatabaseEnd else {
            throw ObjectGraphError(.corruptStore, "\(path): </database> is missing (truncated file?)")
        }
        doc.objects = collector.objects
        return doc
    }

    /// Collects the objects of a store's elements, checking that they nest as Core Data writes them.
    private struct ObjectCollector: XMLScanHandler {
        var objects: [XMLStoreDocument.RawObject] = []
        var current: XMLStoreDocument.RawObject?
        var attribute: XMLStoreDocument.RawAttribute?
        var text = ""
        var path: [String] = []
        /// Elements open inside `<databaseInfo>` (the metadata property list), which are not checked
        /// one by one; counted so that each start tag costs O(1) however deep the plist nests.
        var insideInfo = 0
        var sawDatabaseEnd = false
        var progress: (callback: LoadProgress, lines: Int)?
        var reportedLine = 0

        mutating func startElement(_ name: String, attributes: [XMLScanner.Attribute], line: Int, offset: Int)
            throws(XMLScanFailure)
        {
            guard path.count < XMLInputCheck.maximumDepth else {
                throw XMLScanFailure(
                    "elements nest more than \(XMLInputCheck.maximumDepth) levels deep (Core Data writes 4)")
            }
            defer { path.append(name) }
            if insideInfo > 0 || name == "databaseInfo" && path == ["database"] { insideInfo += 1 }
            if insideInfo > 1 { return }
            func value(_ key: String) -> String? { attributes.first { $0.name == key }?.value }
            switch name {
            case "database":
                if let outer = path.last { throw XMLScanFailure("<database> inside <\(outer)>") }
            case "databaseInfo":
                if path != ["database"] { throw XMLScanFailure("<databaseInfo> outside <database>") }
            case "object":
                guard path == ["database"] else { throw XMLScanFailure("<object> outside <database>") }
                guard let type = value("type"), let id = value("id") else {
                    throw XMLScanFailure("<object> without type or id")
                }
                current = .init(type: type, id: id, line: line)
                // About 200 reports per load; the last one comes after the graph is built.
                if let progress, line - reportedLine > progress.lines / 200 {
                    reportedLine = line
                    progress.callback.report(min(reportedLine, progress.lines - 1), progress.lines)
                }
            case "attribute":
                guard current != nil, path.last == "object" else {
                    throw XMLScanFailure("<attribute> outside <object>")
                }
                guard let n = value("name"), let t = value("type") else {
                    throw XMLScanFailure("<attribute> without name or type")
                }
                attribute = .init(name: n, type: t, text: "")
                text = ""
            case "relationship":
                guard current != nil, path.last == "object" else {
                    throw XMLScanFailure("<relationship> outside <object>")
                }
                guard let n = value("name") else { throw XMLScanFailure("<relationship> without name") }
                // Split by bytes: splitting by Character took 4 % of opening a store.
                let refs = (value("idrefs") ?? "").utf8.split(whereSeparator: {
                    $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D
                })
                current?.relationships.append(
                    .init(
                        name: n, type: value("type") ?? "", destination: value("destination") ?? "",
                        idrefs: refs.map { String(Substring($0)) }))
            default:
                throw XMLScanFailure("unexpected element <\(name)>")
            }
        }

        mutating func characters(_ string: String) throws(XMLScanFailure) {
            if attribute != nil { text += string }
        }

        mutating func endElement(_ name: String) throws(XMLScanFailure) {
            guard path.popLast() != nil else { return }
            if insideInfo > 0 {
                insideInfo -= 1
                return
            }
            switch name {
            case "attribute":
                if var a = attribute {
                    a.text = text
                    current?.attributes.append(a)
                }
                attribute = nil
            case "object":
                if let c = current { objects.append(c) }
                current = nil
            case "database":
                sawDatabaseEnd = true
            default: break
            }
        }
    }
}
