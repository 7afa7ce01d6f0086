import RangeCache
import Testing

@Test func placeholder() { #expect(RangeSet().isEmpty) }
