extension UInt8 {
    /// The byte, an ASCII capital letter made small; any other byte as it
    /// is. Feeds, dates and HTTP header names are case-insensitive in ASCII
    /// only. Inlinable: the HTTP client lowers every header name with it.
    @inlinable
    public var asciiLowercased: UInt8 { self >= 0x41 && self <= 0x5A ? self | 0x20 : self }
}
