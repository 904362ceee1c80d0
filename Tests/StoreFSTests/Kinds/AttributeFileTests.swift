import EmbeddedKernel
import Foundation
import FuseKit
import ObjectGraph
import Testing

@testable import StoreFS

#if canImport(Glibc)
    import Glibc
#endif

/// An attribute's file (``AttributeFile``): the value's text, written, checked and set when the
/// writer is done.
@Suite struct AttributeFileTests {
    @Test func valuesReadInTheirTextForms() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        try k.write("Employee/p20/salary", Data("1234.50\n".utf8))
        try k.write("Employee/p20/birthDate", Data("2024-05-01T12:30:00.25+02:00\n".utf8))
        try k.write("Employee/p20/isRemote", Data("yes\n".utf8))
        #expect(try mount.text("Employee/p20/salary") == "1234.5\n")
        #expect(try mount.text("Employee/p20/birthDate") == "2024-05-01T10:30:00.25Z\n")
        #expect(try mount.text("Employee/p20/isRemote") == "true\n")
        #expect(try k.stat("Employee/p20/isRemote").size == 5, "sizes are exact")
        #expect(
            String(decoding: try k.getxattr("Employee/p20/level", "user.attribute.type"), as: UTF8.self) == "Integer 16"
        )
        #expect(mount.finish().isEmpty)
    }

    @Test func invalidValuesFailAtTheCallThatCanSay() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let level = try mount.text("Employee/p20/level")
        #expect(
            errnoOf { try k.write("Employee/p20/level", Data("abc".utf8)) } == EINVAL, "no continuation makes a number")
        #expect(errnoOf { try k.write("Employee/p20/level", Data("99\n".utf8)) } == EINVAL, "above the maximum")
        #expect(errnoOf { try k.write("Employee/p20/level", Data("4".utf8), .init(pieceSize: 1)) } == nil)
        #expect(errnoOf { try k.write("Employee/p20/level", Data(), .init()) } == EINVAL, "empty at close")
        #expect(try mount.text("Employee/p20/level") == "4\n")
        #expect(errnoOf { try k.write("Employee/p20/lastName", Data([0x61, 0xFF])) } == EINVAL, "not UTF-8")
        #expect(errnoOf { try k.write("Employee/p20/nickname", Data("x\n".utf8)) } == EPERM, "transient")
        // Exactly one newline goes.
        try k.write("Employee/p20/firstName", Data("X\r\n".utf8))
        #expect(try mount.text("Employee/p20/firstName") == "X\r\n")
        try k.write("Employee/p20/lastName", Data("Y\n\n".utf8))
        #expect(try mount.text("Employee/p20/lastName") == "Y\n\n")
        _ = level
        #expect(mount.finish().isEmpty)
    }

    @Test func aValueWrittenThroughAHandleIsSetAtCloseAndSavedAtFsync() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        let before = try mount.text("Department/p1/name")
        let reader = try k.openFile("Department/p1/name")
        let writer = try k.openFile("Department/p1/name", writing: true)
        try k.write(writer, Data("Rewritten\n".utf8), at: 0)
        #expect(
            String(decoding: try k.read(reader, at: 0, size: 100), as: UTF8.self) == before, "a reader keeps its value")
        try k.closeFile(writer)
        try k.closeFile(reader)
        #expect(try mount.text("Department/p1/name") == "Rewritten\n")
        try k.write("Department/p1/code", Data("X1\n".utf8), .init(fsync: true))
        // truncate(1) by path sets the truncated value at once.
        try k.truncate("Department/p1/code", to: 1)
        #expect(try mount.text("Department/p1/code") == "X\n")
        #expect(try mount.remount().isEmpty)
        #expect(try mount.text("Department/p1/name") == "Rewritten\n")
        #expect(try mount.text("Department/p1/code") == "X\n")
        #expect(mount.finish().isEmpty)
    }

    @Test func optionalValuesAreRemovedAndMandatoryOnesRefused() throws {
        let mount = try KernelMount()
        let k = mount.kernel
        try k.unlink("Employee/p20/badgeNumber")
        #expect(errnoOf { _ = try k.stat("Employee/p20/badgeNumber") } == ENOENT)
        #expect(errnoOf { try k.unlink("Employee/p20/lastName") } == EPERM)
        #expect(try k.stat("Employee/p20/lastName").kind == .regularFile)
        #expect(mount.finish().isEmpty)
    }
}
