import Foundation
import FuseKit
import ObjectGraph

#if canImport(Glibc)
    import Glibc
#endif

/// What shows values through the engine rather than through the attribute's file (renderings
/// such as `ATTR.json`, the records of a query folder's `.json`, `.jsonl` and `.csv`) shows a
/// value kept in a file (``FileBackedValue``) as its bytes, read from that file, never as the
/// reference the engine carries for it (docs/SEMANTICS.md, "Values of any size").
extension Mapping {
    /// `value` with the bytes of its file when it is a value kept in a file of at most `limit`
    /// bytes (the file is mapped, not copied into memory); `value` itself otherwise. EFBIG when the
    /// file holds more than `limit`, EIO when it cannot be read.
    func shownValue(_ value: AttributeValue, limit: Int) throws(FileSystemError) -> AttributeValue {
        guard let path = file(of: value) else { return value }
        var status = stat()
        guard stat(path, &status) == 0 else { throw .io }
        guard Int(status.st_size) <= limit else { throw .tooBig }
        do {
            return .data(try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped))
        } catch {
            logger.error("reading the value in \(path): \(error)")
            throw .io
        }
    }

    /// `record` with each value kept in a file as its bytes (``shownValue(_:limit:)``).
    func shownRecord(_ record: ObjectRecord, limit: Int) throws(FileSystemError) -> ObjectRecord {
        guard fileBackedStore != nil else { return record }
        var shown = record
        for (name, value) in record.attributes where FileBackedValue(value) != nil {
            shown.attributes[name] = try shownValue(value, limit: limit)
        }
        return shown
    }
}
