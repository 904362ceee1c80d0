import Foundation

/// A binary value that lives in a file at `path` instead of in memory: what a store that keeps
/// large values outside its rows (SQLite's external data, "Allows External Storage") hands out
/// for them once asked to (``FileBackedValueStore/keepsValuesInFiles()``), and what a writer sets
/// after writing a value into a file the store gave it (``FileBackedValueStore/newValueFile(for:)``).
///
/// The engine carries it as `.data(reference)`: a short byte string that starts with a prefix
/// holding a key drawn at random when the process starts, so no value written from outside (a
/// file's content, a row) can be taken for a reference. Code that shows or copies binary values
/// asks ``init(reference:)`` first and reads the file; code that does not (renderings, predicates)
/// sees the reference bytes, not the value (docs/SEMANTICS.md, "Values of any size").
///
/// Threading: a value; share it freely.
public struct FileBackedValue: Sendable, Hashable {
    /// Where the value is once the save that sets it has committed (the store says where it is
    /// before, ``FileBackedValueStore/currentFile(of:)``).
    public let path: String

    public init(path: String) { self.path = path }

    /// `storefs file-backed value`, then 16 random bytes of this process.
    private static let prefix: Data = {
        var bytes = Data("storefs file-backed value ".utf8)
        withUnsafeBytes(of: UUID().uuid) { bytes.append(contentsOf: $0) }
        return bytes
    }()

    /// The `.data` the engine carries for this value.
    public var reference: Data { Self.prefix + Data(path.utf8) }

    /// The value `data` refers to; nil for any other bytes.
    public init?(reference data: Data) {
        let prefix = Self.prefix
        guard data.count > prefix.count, data.count <= prefix.count + 4096, data.starts(with: prefix),
            let path = String(bytes: data.dropFirst(prefix.count), encoding: .utf8), path.hasPrefix("/")
        else { return nil }
        self.path = path
    }

    /// The value `value` refers to, when it is one.
    public init?(_ value: AttributeValue?) {
        guard case .data(let data)? = value else { return nil }
        self.init(reference: data)
    }
}

/// A store that keeps some binary values in files of their own and lets a writer put a value's
/// bytes straight into such a file, so that a value of any size passes through without being
/// held in memory. SQLite's store does (its external data); the XML, binary, in-memory and
/// PostgreSQL stores keep every value in memory or in a row, within the mount's
/// `max_value_size`.
///
/// Threading: callable from any thread.
public protocol FileBackedValueStore: PersistentStore {
    /// Values of `attribute` larger than this many bytes go to a file of their own (smaller ones
    /// stay in the row); nil when the attribute's values always live in the row.
    func fileThreshold(for attribute: AttributeDescription) -> Int?
    /// From now on, values read from files come as ``FileBackedValue`` references instead of
    /// their bytes. Called before the first fetch by whoever reads them from the files itself.
    func keepsValuesInFiles()
    /// A new, empty file beside the store's value files, for a value of `attribute` to be written
    /// into: `writing` is where to write, `value` what to set once written. It becomes the value
    /// when a save that sets `value` commits (renamed into place in that save; a crash before
    /// leaves the old value); ``discardValueFile(_:)`` removes it when it is not set.
    func newValueFile(for attribute: AttributeDescription) throws(ObjectGraphError)
        -> (writing: String, value: FileBackedValue)
    /// Removes a file ``newValueFile(for:)`` made whose value was never saved.
    func discardValueFile(_ value: FileBackedValue)
    /// The file that holds `value` now: its place once saved, or where it is being written before.
    func currentFile(of value: FileBackedValue) -> String?
}
