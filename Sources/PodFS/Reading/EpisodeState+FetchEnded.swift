/// The fetch-ended event: whether a fetch that stopped is tried again from
/// where it stopped, or ends and leaves its readers to be settled.
extension Episode.State {
    // MARK: - Nested types

    /// What the driver does when a fetch stopped.
    enum FetchEndEffect {
        /// Send the fetch again for `range` after `delay` seconds; `url` is
        /// the remembered end of the redirect chain, if any.
        case retry(range: Range<Int64>, validator: String?, url: String?, attempt: Int, delay: Double)
        /// The fetch is over (and forgotten): settle the opens and reads
        /// that waited for it.
        case ended
    }

    // MARK: - Events

    /// Fetch `id` stopped, with `error` from the transfer (`nil`: the
    /// response ended). `attempt` is the number of attempts made before the
    /// one that just stopped; `tuning` bounds the retries. Returns the
    /// effect and the failure to report, if any: a response that ended
    /// short is a failure too, and a `Retry-After` longer than a read may
    /// wait makes a failure final.
    mutating func fetchEnded(
        id: UInt64, error: FetchError?, attempt: Int, tuning: EpisodeReader.Tuning
    ) -> (FetchEndEffect, FetchError?) {
        var failure = error
        guard let progress = fetches[id] else { return (.ended, failure) }
        if failure == nil, progress.cursor < progress.upper {
            failure = FetchError(
                isTransient: true, isUnreachable: false,
                message: "the origin closed the response \(progress.upper - progress.cursor) bytes early")
        }
        if let asked = failure?.retryAfter, asked > tuning.longestRetryAfter {
            // Waiting that long would hold the reader for minutes, and
            // asking sooner ignores the origin: give up now, saying so.
            failure?.message += "; it asks to be asked again in \(Int(asked.rounded(.up))) s, longer than "
                + "podfs holds a read (\(Int(tuning.longestRetryAfter)) s): read again later"
            failure?.isTransient = false
        }
        // Offline with a cached length: the cache answers, not a retry.
        if let failure, failure.isTransient, progress.generation == generation, attempt < tuning.attempts,
            !(failure.isUnreachable && !validated && length != nil)
        {
            fetches[id]?.retrying = true
            // A growing backoff, or as long as the origin asked.
            let delay = max(0.1 * Double(1 << min(attempt, 5)), failure.retryAfter ?? 0)
            let effect = FetchEndEffect.retry(
                range: progress.cursor..<progress.upper, validator: version.ifRange, url: effectiveURL,
                attempt: attempt, delay: delay)
            return (effect, failure)
        }
        fetches[id] = nil
        return (.ended, failure)
    }
}
