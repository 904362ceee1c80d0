import Decoding
import Foundation
import ObjectGraph
import TestSupport
import Testing

/// A store's own property lists (its metadata) are read by the bounded readers, never by
/// Foundation's PropertyListSerialization, which recursed without bound on a deep list.
@Suite struct StoredPropertyListTests {
    static func refusal(_ data: Data) -> ObjectGraphError? {
        do {
            _ = try StoredPropertyList.dictionary(data, source: "Z_METADATA")
            return nil
        } catch {
            return error
        }
    }

    @Test func metadataWrittenByFoundationReadsBack() throws {
        let values: [String: Any] = [
            "NSStoreType": "SQLite", "count": 3, "ratio": 0.5, "flag": true,
            "when": Date(timeIntervalSinceReferenceDate: 12),
            "blob": Data([1, 2, 3]), "list": ["a", 1], "nested": ["k": ["v"]]
        ]
        for format in [PropertyListSerialization.PropertyListFormat.binary, .xml] {
            let data = try PropertyListSerialization.data(fromPropertyList: values, format: format, options: 0)
            let read = try StoredPropertyList.dictionary(data, source: "test")
            #expect(read["NSStoreType"] == .string("SQLite"))
            #expect(read["count"] == .integer(3))
            #expect(read["ratio"] == .real(0.5))
            #expect(read["flag"] == .boolean(true))
            #expect(read["when"] == .date(Date(timeIntervalSinceReferenceDate: 12)))
            #expect(read["blob"] == .data(Data([1, 2, 3])))
            #expect(read["list"] == .array([.string("a"), .integer(1)]))
            #expect(read["nested"] == .dictionary(["k": .array([.string("v")])]))
        }
    }

    @Test func aDeepListIsAClearErrorNotACrash() {
        let binary = Self.refusal(nestedBinaryPropertyList(depth: 300_000))
        #expect(
            binary?.code == .corruptStore && binary?.message.contains("deeper") == true, "\(String(describing: binary))"
        )
        let xml = Data(
            ("<?xml version=\"1.0\"?><plist version=\"1.0\">" + String(repeating: "<array>", count: 300_000)
                + String(repeating: "</array>", count: 300_000) + "</plist>").utf8)
        #expect(Self.refusal(xml)?.code == .corruptStore)
    }

    /// 40 levels of 40 references to the next: a file of a few kilobytes, 40^40 values expanded.
    @Test func sharedReferencesThatExpandWithoutBoundAreAClearError() {
        let error = Self.refusal(nestedBinaryPropertyList(depth: 40, fanOut: 40))
        #expect(error?.message.contains("more than") == true, "\(String(describing: error))")
    }

    @Test(arguments: [Data("not a plist".utf8), Data(), Data("bplist00".utf8)])
    func whatIsNoPropertyListIsAClearError(data: Data) {
        #expect(Self.refusal(data)?.code == .corruptStore)
    }
}
