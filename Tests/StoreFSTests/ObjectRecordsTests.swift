import Foundation
import ObjectGraph
import Testing

@testable import StoreFS

/// The JSON and CSV of objects that `storefs export` and a query's `.json`/`.csv` share: every
/// value as the file shows it, relationships as object URIs, and output that standard parsers
/// read back to exactly those texts whatever the values hold.
@Suite struct ObjectRecordsTests {
    static let uuid = "0F6D869B-0CFB-4EDC-BE76-DC64BA57BF2E"

    /// An employee with hostile strings, a binary value, a nil, a to-one and an ordered to-many.
    static func records() throws -> (ManagedObjectModel, [ObjectRecord]) {
        let model = SampleModel.make()
        let employee = try #require(model.entityID(named: "Employee"))
        let manager = try #require(model.entityID(named: "Manager"))
        let department = try #require(model.entityID(named: "Department"))
        let project = try #require(model.entityID(named: "Project"))
        var ada = Snapshot(objectID: ObjectID(entity: employee, key: PrimaryKey(12)), version: 3)
        ada.attributes = [
            "firstName": .string("Ada \"the\" \\first\\,\n\tcountess\u{0}\u{1F}é日本"),
            "lastName": .string(""),
            "level": .integer(-7),
            "salary": .decimal(Decimal(string: "1234.50")!),
            "hoursPerWeek": .double(0.1),
            "rating": .float(4.1),
            "isRemote": .boolean(true),
            "birthDate": .date(Date(timeIntervalSinceReferenceDate: -1e9 + 0.25)),
            "personID": .uuid(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00CF4FC964FF")!),
            "photo": .data(Data([0, 1, 2, 255]))
        ]
        ada.toOne = ["department": ObjectID(entity: department, key: PrimaryKey(3))]
        let adaRecord = ObjectRecord(
            snapshot: ada,
            toMany: [
                "projects": [
                    ObjectID(entity: project, key: PrimaryKey(9)), ObjectID(entity: project, key: PrimaryKey(2))
                ]
            ])
        var grace = Snapshot(objectID: ObjectID(entity: manager, key: PrimaryKey(4)), version: 1)
        grace.attributes = [
            "firstName": .string("Grace"), "lastName": .string("Hopper"), "title": .string("Rear, Admiral")
        ]
        let graceRecord = ObjectRecord(
            snapshot: grace,
            toMany: ["projects": [], "directReports": [ObjectID(entity: employee, key: PrimaryKey(12))]])
        return (model, [adaRecord, graceRecord])
    }

    @Test func jsonLinesHoldEveryValueAsTheFileShowsIt() throws {
        let (model, records) = try Self.records()
        let writer = try ObjectRecords(format: .jsonLines, model: model, storeUUID: Self.uuid, entity: nil)
        let lines = String(decoding: writer.document(of: records), as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty, "one line per object, each ending in a newline")
        let ada = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(ada["@entity"] as? String == "Employee")
        #expect(ada["@uri"] as? String == "x-coredata://\(Self.uuid)/Employee/p12")
        #expect(ada["firstName"] as? String == "Ada \"the\" \\first\\,\n\tcountess\u{0}\u{1F}é日本")
        #expect(ada["lastName"] as? String == "")
        #expect(ada["level"] as? String == "-7")
        #expect(ada["salary"] as? String == "1234.5")
        #expect(ada["hoursPerWeek"] as? String == "0.1")
        #expect(ada["rating"] as? String == "4.1")
        #expect(ada["isRemote"] as? String == "true")
        #expect(ada["birthDate"] as? String == ValueText.format(Date(timeIntervalSinceReferenceDate: -1e9 + 0.25)))
        #expect(ada["personID"] as? String == "6f9619ff-8b86-d011-b42d-00cf4fc964ff")
        #expect(ada["photo"] as? String == Data([0, 1, 2, 255]).base64EncodedString())
        #expect(ada["badgeNumber"] is NSNull, "nil is null, and present")
        #expect(ada["department"] as? String == "x-coredata://\(Self.uuid)/Department/p3")
        #expect(ada["manager"] is NSNull)
        #expect(
            ada["projects"] as? [String] == [
                "x-coredata://\(Self.uuid)/Project/p9", "x-coredata://\(Self.uuid)/Project/p2"
            ],
            "in the relationship's order")
        #expect(ada["nickname"] == nil, "transient attributes are not stored, so not written")
        // Keys in the model's order: @entity, @uri, attributes (inherited first), relationships.
        let positions = ["@entity", "@uri", "firstName", "lastName", "photo", "employeeID", "department", "projects"]
            .map {
                lines[0].range(of: "\"\($0)\":")?.lowerBound
            }
        #expect(positions.allSatisfy { $0 != nil } && positions == positions.sorted { $0! < $1! }, "\(lines[0])")
        let grace = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(grace["@entity"] as? String == "Manager")
        #expect(grace["title"] as? String == "Rear, Admiral")
        #expect(grace["directReports"] as? [String] == ["x-coredata://\(Self.uuid)/Employee/p12"])
        #expect(grace["projects"] as? [String] == [])
    }

    @Test func jsonIsOneArray() throws {
        let (model, records) = try Self.records()
        let writer = try ObjectRecords(format: .json, model: model, storeUUID: Self.uuid, entity: nil)
        let array = try #require(
            try JSONSerialization.jsonObject(with: writer.document(of: records)) as? [[String: Any]])
        #expect(array.count == 2)
        #expect(
            array.map { $0["@uri"] as? String } == [
                "x-coredata://\(Self.uuid)/Employee/p12", "x-coredata://\(Self.uuid)/Manager/p4"
            ])
        #expect(String(decoding: writer.document(of: []), as: UTF8.self) == "[]\n")
        #expect(try JSONSerialization.jsonObject(with: writer.document(of: Array(records.prefix(1)))) is [Any])
    }

    @Test func csvHasOneHeaderAndQuotesWhatNeedsIt() throws {
        let (model, records) = try Self.records()
        let employee = try #require(model.entityID(named: "Employee"))
        #expect(throws: ObjectGraphError.self) {
            try ObjectRecords(format: .csv, model: model, storeUUID: Self.uuid, entity: nil)
        }
        let writer = try ObjectRecords(format: .csv, model: model, storeUUID: Self.uuid, entity: employee)
        let rows = try Self.parseCSV(String(decoding: writer.document(of: records), as: UTF8.self))
        #expect(rows.count == 3)
        let header = rows[0].map(\.text)
        // Employee's columns, then what its subentity Manager adds.
        #expect(header.prefix(4) == ["@entity", "@uri", "firstName", "lastName"])
        #expect(header.suffix(3) == ["title", "directReports", "headOf"])
        #expect(rows.allSatisfy { $0.count == header.count }, "every row has every column")
        func cell(_ row: Int, _ name: String) -> CSVCell? { rows[row][header.firstIndex(of: name)!] }
        #expect(cell(1, "firstName") == .quoted("Ada \"the\" \\first\\,\n\tcountess\u{0}\u{1F}é日本"))
        #expect(cell(1, "lastName") == .quoted(""), "an empty string is quoted")
        #expect(cell(1, "badgeNumber") == .plain(""), "nil is an empty field")
        #expect(cell(1, "level") == .plain("-7"))
        #expect(cell(1, "photo") == .plain(Data([0, 1, 2, 255]).base64EncodedString()))
        #expect(
            cell(1, "projects") == .plain("x-coredata://\(Self.uuid)/Project/p9 x-coredata://\(Self.uuid)/Project/p2"))
        #expect(cell(1, "title") == .plain(""), "a column the entity lacks is empty")
        #expect(cell(2, "@entity") == .plain("Manager"))
        #expect(cell(2, "title") == .quoted("Rear, Admiral"))
        #expect(cell(2, "directReports") == .plain("x-coredata://\(Self.uuid)/Employee/p12"))
    }

    @Test func streamingGivesTheDocument() throws {
        let (model, records) = try Self.records()
        for format in ObjectRecordFormat.allCases {
            var writer = try ObjectRecords(
                format: format, model: model, storeUUID: Self.uuid, entity: model.entityID(named: "Person"))
            var out: [UInt8] = []
            writer.begin(into: &out)
            for record in records { writer.append(record, into: &out) }
            writer.end(into: &out)
            #expect(writer.count == 2)
            #expect(Data(out) == writer.document(of: records), "\(format)")
        }
    }

    @Test func uuidsAreFoundationsTextInLowerCase() {
        for _ in 0..<1000 {
            let uuid = UUID()
            #expect(ValueText.text(of: .uuid(uuid)) == uuid.uuidString.lowercased())
        }
    }

    @Test func keysAreWrittenInDecimal() {
        for value: Int64 in [0, 1, 9, 10, 12, 99_999, 4_294_967_295, 1_234_567_890_123_456_789, .max, -1, .min] {
            var out: [UInt8] = []
            ObjectRecords.appendDecimal(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(value))
        }
    }

    // MARK: - A strict CSV reader (RFC 4180), telling quoted fields from plain ones

    enum CSVCell: Equatable {
        case plain(String)
        case quoted(String)

        var text: String {
            switch self {
            case .plain(let text), .quoted(let text): text
            }
        }
    }

    struct CSVError: Error {}

    static func parseCSV(_ text: String) throws -> [[CSVCell]] {
        var rows: [[CSVCell]] = []
        var row: [CSVCell] = []
        var characters = Array(text.unicodeScalars)[...]
        while !characters.isEmpty {
            if characters.first == "\"" {
                characters.removeFirst()
                var value = String.UnicodeScalarView()
                while true {
                    guard let c = characters.popFirst() else { throw CSVError() }
                    if c == "\"" {
                        if characters.first == "\"" {
                            characters.removeFirst()
                            value.append("\"")
                        } else {
                            break
                        }
                    } else {
                        value.append(c)
                    }
                }
                row.append(.quoted(String(value)))
            } else {
                var value = String.UnicodeScalarView()
                while let c = characters.first, c != ",", c != "\n" {
                    guard c != "\"" else { throw CSVError() }
                    value.append(c)
                    characters.removeFirst()
                }
                row.append(.plain(String(value)))
            }
            switch characters.popFirst() {
            case ",": continue
            case "\n":
                rows.append(row)
                row = []
            default: throw CSVError()
            }
        }
        guard row.isEmpty else { throw CSVError() }
        return rows
    }
}
