//! Who is watching: at most `view.max_viewers` event streams on the gateway, and at most
//! `view.max_viewers_per_link` on any one link, so that one link's holder (or whoever it was
//! forwarded to) cannot take every slot.
//!
//! A link is counted by the SHA-256 of its token: the table holds no working link.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

/// Why a stream was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Every slot of the gateway is taken.
    Gateway,
    /// Every slot one link may take is taken.
    Link,
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_link: HashMap<[u8; 32], usize>,
}

/// The open streams, counted; cheap to clone.
#[derive(Clone)]
pub struct Viewers {
    max_total: usize,
    max_per_link: usize,
    counts: Arc<Mutex<Counts>>,
}

/// One open stream's place, given back when dropped.
pub struct ViewerSlot {
    link: [u8; 32],
    counts: Arc<Mutex<Counts>>,
}

impl Viewers {
    pub fn new(max_total: usize, max_per_link: usize) -> Self {
        Self {
            max_total,
            max_per_link,
            counts: Arc::default(),
        }
    }

    /// A place for one more stream of the link `token`, or which limit stops it.
    pub fn admit(&self, token: &str) -> Result<ViewerSlot, Full> {
        let link: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut counts = lock(&self.counts);
        if counts.total >= self.max_total {
            return Err(Full::Gateway);
        }
        let of_link = counts.by_link.entry(link).or_default();
        if *of_link >= self.max_per_link {
            return Err(Full::Link);
        }
        *of_link += 1;
        counts.total += 1;
        Ok(ViewerSlot {
            link,
            counts: Arc::clone(&self.counts),
        })
    }

    /// Streams open now (for the tests: the gateway only admits and drops).
    #[cfg(test)]
    fn open(&self) -> usize {
        lock(&self.counts).total
    }
}

impl Drop for ViewerSlot {
    fn drop(&mut self) {
        let mut counts = lock(&self.counts);
        counts.total = counts.total.saturating_sub(1);
        if let Some(of_link) = counts.by_link.get_mut(&self.link) {
            *of_link = of_link.saturating_sub(1);
            if *of_link == 0 {
                counts.by_link.remove(&self.link);
            }
        }
    }
}

fn lock(counts: &Mutex<Counts>) -> std::sync::MutexGuard<'_, Counts> {
    // Every update is one await-free step: a panic elsewhere leaves the counts whole.
    counts.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_link_cannot_take_every_slot() {
        let viewers = Viewers::new(4, 2);
        let a1 = viewers.admit("link-a").unwrap();
        let _a2 = viewers.admit("link-a").unwrap();
        assert_eq!(viewers.admit("link-a").err(), Some(Full::Link));
        let _b1 = viewers.admit("link-b").unwrap();
        let _c1 = viewers.admit("link-c").unwrap();
        assert_eq!(viewers.admit("link-d").err(), Some(Full::Gateway));
        drop(a1);
        assert_eq!(viewers.open(), 3);
        let _a3 = viewers.admit("link-a").unwrap();
        assert_eq!(viewers.open(), 4);
    }

    #[test]
    fn slots_come_back_when_streams_end() {
        let viewers = Viewers::new(2, 2);
        for _ in 0..10 {
            let one = viewers.admit("link").unwrap();
            let two = viewers.admit("link").unwrap();
            drop((one, two));
        }
        assert_eq!(viewers.open(), 0);
        assert!(
            lock(&viewers.counts).by_link.is_empty(),
            "no link is remembered"
        );
    }
}
