import Testing

@testable import ObjectGraph

/// A snapshot's values read and write like a dictionary by name, whether they were built on a
/// shared name list or name by name.
@Suite struct PropertyValuesTests {
    /// A small deterministic generator (SplitMix64), so a failure repeats.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Random sets and removals, on values over `layoutSize` shared names with names outside it
    /// mixed in, agree with a dictionary given the same operations: every lookup, the count, the
    /// names in order, iteration, equality and hash with values built from the dictionary.
    @Test(arguments: [0, 3, 15, 16, 17, 60])
    func randomEditsAgreeWithADictionary(layoutSize: Int) {
        var random = Seeded(state: UInt64(layoutSize) &+ 7)
        let pool = (0..<(layoutSize + 12)).map { "p\($0 * 7919 % 1000)" }
        let layout = PropertyNames(pool.prefix(layoutSize).shuffled(using: &random))
        var values = PropertyValues<AttributeValue>(layout: layout)
        var reference: [String: AttributeValue] = [:]
        for step in 0..<600 {
            let name = pool[Int(random.next() % UInt64(pool.count))]
            if random.next() % 3 == 0 {
                #expect(values.removeValue(forKey: name) == reference.removeValue(forKey: name))
            } else {
                let value = AttributeValue.integer(Int64(step))
                values[name] = value
                reference[name] = value
            }
            if step % 53 == 0 || step == 599 {
                for candidate in pool + ["absent", ""] {
                    #expect(values[candidate] == reference[candidate], "\(candidate)")
                }
                #expect(values.count == reference.count)
                #expect(values.isEmpty == reference.isEmpty)
                #expect(values.keys == reference.keys.sorted())
                #expect(values.map(\.key) == reference.keys.sorted())
                #expect(values.dictionary == reference)
                let rebuilt = PropertyValues(reference)
                #expect(values == rebuilt, "equal whatever name list each was built on")
                #expect(values.hashValue == rebuilt.hashValue)
            }
        }
    }

    @Test func nilSlotsAndNameListsDoNotMatterToEquality() {
        let wide = PropertyNames(["a", "b", "c", "d"])
        var onWide = PropertyValues<AttributeValue>(layout: wide)
        onWide["b"] = .string("x")
        var onNarrow = PropertyValues<AttributeValue>(layout: PropertyNames(["b"]))
        onNarrow["b"] = .string("x")
        let literal: PropertyValues<AttributeValue> = ["b": .string("x")]
        #expect(onWide == onNarrow && onNarrow == literal)
        #expect(Set([onWide, onNarrow, literal]).count == 1)
        #expect(onWide.count == 1 && onWide.keys == ["b"])
        onWide["c"] = .string("y")
        #expect(onWide != literal)
        onWide["c"] = nil
        #expect(onWide == literal, "a removed value is gone, not a nil value")
        #expect(PropertyValues<AttributeValue>(layout: wide) == [:])
        #expect(PropertyValues<AttributeValue>(layout: wide).isEmpty)
    }

    @Test func aNameListIsSortedWithoutRepeats() {
        #expect(PropertyNames(["b", "a", "c", "a"]).sorted == ["a", "b", "c"])
        #expect(PropertyNames([]).sorted.isEmpty)
    }

    /// A store fills values by slot: each name given lands where a lookup by name finds it.
    @Test func valuesSetBySlotReadByName() {
        let given = ["zeta", "alpha", "mu", "alpha", "beta"]
        let (names, slots) = PropertyNames.slotted(given)
        #expect(names.sorted == ["alpha", "beta", "mu", "zeta"])
        #expect(slots == [3, 0, 2, 0, 1])
        var values = PropertyValues<AttributeValue>(layout: names)
        for (i, slot) in slots.enumerated() { values.setValue(.integer(Int64(i)), slot: slot) }
        #expect(
            values.dictionary == ["zeta": .integer(0), "alpha": .integer(3), "mu": .integer(2), "beta": .integer(4)])
        values.setValue(nil, slot: slots[2])
        #expect(values["mu"] == nil && values.count == 3)
    }

    /// A name in another Unicode normalization form is the same name, as it is to a dictionary
    /// (and to the model's `attribute(named:)`), in short lists (scanned) and long ones (halved).
    @Test(arguments: [2, 30])
    func aNameInAnotherNormalizationFormIsTheSameName(listSize: Int) {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed.utf8.count != decomposed.utf8.count)
        let names = [composed] + (1..<listSize).map { "n\($0)" }
        var values = PropertyValues<AttributeValue>(layout: PropertyNames(names))
        values[composed] = .integer(1)
        #expect(values[decomposed] == .integer(1))
        values[decomposed] = .integer(2)
        #expect(values.count == 1 && values[composed] == .integer(2))
        values[decomposed] = nil
        #expect(values.isEmpty)
    }

    @Test func ofRepeatedNamesInALiteralTheLastWins() {
        let values: PropertyValues<AttributeValue> = ["a": .integer(1), "b": .integer(2), "a": .integer(3)]
        #expect(values["a"] == .integer(3))
        #expect(values.count == 2)
    }

    @Test func editingACopyLeavesTheSharedNamesAndTheOriginalAlone() {
        let layout = PropertyNames(["a", "c"])
        var first = PropertyValues<AttributeValue>(layout: layout)
        first["a"] = .integer(1)
        var second = first
        second["b"] = .integer(2)
        second["a"] = nil
        #expect(first.dictionary == ["a": .integer(1)])
        #expect(second.dictionary == ["b": .integer(2)])
        #expect(PropertyValues<AttributeValue>(layout: layout).isEmpty)
        #expect(layout.sorted == ["a", "c"])
    }
}
