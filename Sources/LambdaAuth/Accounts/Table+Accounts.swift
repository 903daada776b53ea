extension RefreshTokenRecord {
    static let usedVisibility: Int64 = 3600
    static let revokedVisibility: Int64 = 86_400
    static let expiredVisibility: Int64 = 86_400
}

/// Where the account layer meets the generic table: pagination followed, and table failures turned
/// into the contract's errors (the table itself knows nothing of the contract's codes).
extension Table {
    /// Every item of a query, following pagination; table errors become the contract's.
    func queryAll(_ request: QueryRequest) throws(AuthError) -> [Item] {
        var request = request
        var items: [Item] = []
        do {
            while true {
                let page = try query(request)
                items += page.items
                guard let next = page.lastEvaluatedKey else { return items }
                request.exclusiveStartKey = next
            }
        } catch {
            throw error.authError
        }
    }

    func read(_ key: TableKey) throws(AuthError) -> Item? {
        do {
            return try getItem(key)
        } catch {
            throw error.authError
        }
    }

    /// Runs a transaction; a cancellation comes back as its reasons (one per action) for the flow to
    /// interpret, every other failure as the contract's error.
    func transact(_ actions: [TransactWriteAction]) throws(AuthError) -> [CancellationReason]? {
        do {
            try transactWrite(actions)
            return nil
        } catch .transactionCanceled(let reasons) {
            return reasons
        } catch {
            throw error.authError
        }
    }
}

extension [CancellationReason] {
    func failed(_ index: Int) -> Bool {
        index < count && self[index].code == "ConditionalCheckFailed"
    }
}
