/// What a record of one table looks like, to tell its records among bytes: how many columns, what
/// each may hold (by the column's declared type, as SQLite's affinity rules store it), which
/// column is the rowid's alias (always NULL in the record), and for Core Data's tables the entity
/// column (Z_ENT) with the numbers its entities have and the version column (Z_OPT).
///
/// Two strengths of check: a cell read from its page's cell pointers has a structure that
/// already vouches for it and is checked leniently; bytes carved from free space are checked
/// strictly (every value of its column's kind), since only the signature tells them from noise.
public struct TableSignature: Sendable, Hashable {
    /// What a column may hold, from its declared type.
    public enum Affinity: Sendable, Hashable {
        /// INTEGER, BOOLEAN: integers (a REAL that is not whole stays REAL).
        case integer
        /// FLOAT, DOUBLE, REAL, TIMESTAMP, DECIMAL, NUMERIC: numbers (whole ones may be stored as integers).
        case real
        /// VARCHAR, TEXT, CHAR, CLOB: text.
        case text
        /// BLOB: blobs (what Core Data writes there: data, transformable and archived values;
        /// SQLite would keep another kind as given, but no store writes one).
        case blob
        /// No type: anything.
        case none
    }

    public struct Column: Sendable, Hashable {
        public var name: String
        public var affinity: Affinity
        /// Declared TIMESTAMP: Core Data's dates, seconds since 2001.
        public var isTimestamp: Bool

        public init(name: String, declaredType: String) {
            self.name = name
            affinity = Self.affinity(of: declaredType)
            isTimestamp = declaredType.uppercased().contains("TIMESTAMP")
        }

        /// SQLite's rules for a declared type's affinity (section 3.1 of its datatype page).
        static func affinity(of declared: String) -> Affinity {
            let type = declared.uppercased()
            if type.contains("INT") { return .integer }
            if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return .text }
            if type.isEmpty { return .none }
            if type.contains("BLOB") { return .blob }
            return .real
        }
    }

    public var name: String
    public var columns: [Column]
    /// The column declared INTEGER PRIMARY KEY (stored as NULL; its value is the rowid).
    public var rowidColumn: Int?
    /// Z_ENT, and the values it may hold here.
    public var entityColumn: Int?
    public var entityCodes: Set<Int64>
    /// Z_OPT.
    public var versionColumn: Int?
    /// The table's root page in the version the store reads (its live rows).
    public var rootPage: UInt32?

    public init(
        name: String, columns: [Column], rowidColumn: Int?, entityColumn: Int?, entityCodes: Set<Int64>,
        versionColumn: Int?, rootPage: UInt32?
    ) {
        self.name = name
        self.columns = columns
        self.rowidColumn = rowidColumn
        self.entityColumn = entityColumn
        self.entityCodes = entityCodes
        self.versionColumn = versionColumn
        self.rootPage = rootPage
    }

    /// Whether a record with these serial types can be a row of this table. `strict`: every value
    /// of its column's kind, and every column present (rows written before an ALTER TABLE ADD
    /// COLUMN have fewer; only intact cells are allowed that).
    public func accepts(types: [Int64], strict: Bool) -> Bool {
        guard types.count == columns.count || (!strict && types.count >= 3 && types.count < columns.count) else {
            return false
        }
        if let rowidColumn, rowidColumn < types.count, types[rowidColumn] != 0 { return false }
        if let entityColumn, entityColumn < types.count, !RecordFormat.isInteger(types[entityColumn]) { return false }
        if let versionColumn, versionColumn < types.count, types[versionColumn] != 0,
            !RecordFormat.isInteger(types[versionColumn])
        {
            return false
        }
        guard strict else { return true }
        for (index, type) in types.enumerated() where !acceptsStrictly(type, column: index) { return false }
        return true
    }

    /// Whether serial type `type` is of column `index`'s kind (its affinity; NULL fits any).
    @inline(__always)
    public func acceptsStrictly(_ type: Int64, column index: Int) -> Bool {
        guard type != 0, index < columns.count else { return index < columns.count }
        switch columns[index].affinity {
        case .integer, .real: return RecordFormat.isInteger(type) || type == 7
        case .text: return type >= 13 && type % 2 == 1
        case .blob: return type >= 12 && type % 2 == 0
        case .none: return true
        }
    }

    /// Whether the values of a record this table ``accepts(types:strict:)`` can be its row: Z_ENT
    /// one of its entities, Z_OPT not negative, texts valid UTF-8 when `strict`.
    public func accepts(values: [RecordValue], strict: Bool) -> Bool {
        if let entityColumn, entityColumn < values.count {
            guard case .integer(let code) = values[entityColumn], entityCodes.contains(code) else { return false }
        }
        if let versionColumn, versionColumn < values.count, case .integer(let version) = values[versionColumn],
            version < 0
        {
            return false
        }
        if strict {
            for value in values {
                if case .text(let bytes) = value, String(validating: bytes, as: UTF8.self) == nil { return false }
                if case .real(let d) = value, d.isNaN { return false }
            }
        }
        return true
    }

    /// Whether a record carved from free space says anything of the object it was: among what
    /// survived, a value its body stores for a column other than the rowid, Z_ENT and Z_OPT. A
    /// record of NULLs, zeros and ones (which its header alone holds) is not told from noise.
    public func holdsAValue(_ record: SurvivingRecord) -> Bool {
        for index in 0..<min(record.intactColumns, record.types.count)
        where index != rowidColumn && index != entityColumn && index != versionColumn {
            if (RecordFormat.contentSize(of: record.types[index]) ?? 0) > 0 { return true }
        }
        return false
    }

    /// The largest date, in seconds from 2001, a carved TIMESTAMP may hold: Foundation's
    /// `distantFuture` and `distantPast` are about 6.3e10 seconds away; bytes read as a date much
    /// further off are not one an app wrote.
    static let largestDate = 1e11
    /// The smallest non-zero distance from 2001 a carved date may have: a date within a
    /// millisecond of the reference date but not on it (1e-282 s, what stray bytes read as) is
    /// not one an app wrote.
    static let smallestDate = 1e-3

    /// Whether a record carved from free space (whole or partial) is one SQLite could have written
    /// for this table: it ``holdsAValue(_:)``, every integer in the smallest serial type that holds
    /// it (as SQLite writes them; 0 and 1 in the header alone from schema format 4), every date
    /// within ``largestDate`` of 2001 (and on it or at least ``smallestDate`` from it).
    public func isPlausibleCarving(_ record: SurvivingRecord, schemaFormat: UInt32) -> Bool {
        guard holdsAValue(record) else { return false }
        for index in record.types.indices where index < columns.count {
            let type = record.types[index]
            guard let value = record.value(index) else { continue }
            switch value {
            case .integer(let v):
                if type >= 1 && type <= 6 {
                    if RecordFormat.serialType(of: value) != type
                        && !(schemaFormat < 4 && (v == 0 || v == 1) && type == 1)
                    {
                        return false
                    }
                }
                if columns[index].isTimestamp && abs(Double(v)) > Self.largestDate { return false }
            case .real(let d):
                if columns[index].isTimestamp
                    && !(abs(d) <= Self.largestDate && (d == 0 || abs(d) >= Self.smallestDate))
                {
                    return false
                }
            default:
                break
            }
        }
        return true
    }

    /// Whether a record whose end was overwritten (``SurvivingRecord``) can be a row of this
    /// table: its header as ``accepts(types:strict:)`` wants it, its Z_ENT surviving and one of
    /// the table's, the values that survive as ``accepts(values:strict:)`` wants them, and
    /// ``holdsAValue(_:)`` (strict ones are checked further with ``isPlausibleCarving(_:schemaFormat:)``).
    public func accepts(partial record: SurvivingRecord, strict: Bool) -> Bool {
        guard accepts(types: record.types, strict: strict) else { return false }
        if let entityColumn {
            guard case .integer(let code)? = record.value(entityColumn), entityCodes.contains(code) else {
                return false
            }
        }
        if let versionColumn, case .integer(let version)? = record.value(versionColumn), version < 0 { return false }
        if strict {
            for index in record.types.indices {
                switch record.value(index) {
                case .text(let bytes)?: if String(validating: bytes, as: UTF8.self) == nil { return false }
                case .real(let d)?: if d.isNaN { return false }
                default: break
                }
            }
        }
        return holdsAValue(record)
    }
}
