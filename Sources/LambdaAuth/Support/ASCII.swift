extension UInt8 {
    /// 0-9, A-Z or a-z, or one of the ASCII characters of `extra`: the shape of every name and
    /// identifier this project accepts from outside (table names, request ids, namespaces, the
    /// values an event line may carry).
    func isASCIIAlphanumeric(or extra: String = "") -> Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A) || extra.utf8.contains(self)
    }
}
