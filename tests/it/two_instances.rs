//! Two servers on one database: the id allocator never issues a code twice, and every link
//! redirects on both.

use crate::support::{TestApp, TestDb, spawn_on};
use futures_util::future::join_all;
use inklink::db::entities::url_map;
use inklink::services::Actor;
use inklink::services::links::{self, NewLink};
use sea_orm::{EntityTrait, PaginatorTrait};
use std::collections::HashSet;
use std::sync::Arc;

const LINKS: usize = 5000;
const CREATORS_PER_INSTANCE: usize = 8;

async fn create_many(app: &TestApp, worker: usize, count: usize) -> Vec<String> {
    let mut codes = Vec::with_capacity(count);
    for n in 0..count {
        let url = format!("https://example.com/{}/{worker}/{n}", app.port);
        let target = inklink::services::links::parse_target(&app.core, &url)
            .await
            .unwrap();
        let saved = links::create(&app.core, NewLink::to(target), &Actor::Cli)
            .await
            .unwrap_or_else(|err| panic!("link {n} of creator {worker}: {err}"));
        codes.push(saved.link.compression_code.to_string());
    }
    codes
}

#[actix_web::test]
async fn two_instances_create_5000_links_concurrently_without_a_duplicate() {
    let db = Arc::new(TestDb::create().await);
    let a = spawn_on(db.clone(), &[]).await;
    let b = spawn_on(db.clone(), &[]).await;
    let per_creator = LINKS / (2 * CREATORS_PER_INSTANCE);
    let creators = (0..CREATORS_PER_INSTANCE).flat_map(|worker| {
        [
            create_many(&a, worker, per_creator),
            create_many(&b, worker, per_creator),
        ]
    });
    let codes: Vec<String> = join_all(creators).await.into_iter().flatten().collect();
    let remainder = LINKS - codes.len();
    let codes: Vec<String> = codes
        .into_iter()
        .chain(create_many(&a, 99, remainder).await)
        .collect();
    assert_eq!(codes.len(), LINKS);
    let distinct: HashSet<_> = codes.iter().collect();
    assert_eq!(distinct.len(), LINKS, "a code was issued twice");
    assert_eq!(
        url_map::Entity::find().count(&a.core.db).await.unwrap(),
        LINKS as u64
    );

    for app in [&a, &b] {
        for chunk in codes.chunks(50) {
            let statuses = join_all(chunk.iter().map(|code| async move {
                let response = app
                    .client
                    .get(app.url(&format!("/{code}")))
                    .send()
                    .await
                    .unwrap();
                (
                    response.status().as_u16(),
                    response.headers().contains_key("location"),
                )
            }))
            .await;
            assert!(statuses.iter().all(|s| *s == (302, true)), "{statuses:?}");
        }
    }
}

#[actix_web::test]
async fn allocators_racing_for_a_new_sequence_never_deadlock_or_share_ids() {
    use inklink::db::allocator::BlockAllocator;
    let db = TestDb::create().await;
    let mut connections = Vec::new();
    for _ in 0..4 {
        // Separate pools, like separate processes.
        connections.push(inklink::db::connect(&db.url, 2).await.unwrap());
    }
    inklink::db::migrate_up(&connections[0]).await.unwrap();
    for race in 0..10 {
        let name: &'static str = Box::leak(format!("race-{race}").into_boxed_str());
        let allocators: Vec<_> = (0..8).map(|_| BlockAllocator::new(name, 16)).collect();
        let ids = join_all(allocators.iter().enumerate().map(|(n, allocator)| {
            let connection = &connections[n % connections.len()];
            async move {
                let mut ids = Vec::new();
                for _ in 0..40 {
                    ids.push(
                        allocator
                            .next_id(connection)
                            .await
                            .expect("no deadlock escapes"),
                    );
                }
                ids
            }
        }))
        .await;
        let all: Vec<u64> = ids.into_iter().flatten().collect();
        let distinct: HashSet<_> = all.iter().collect();
        assert_eq!(
            distinct.len(),
            all.len(),
            "race {race}: an id was handed out twice"
        );
    }
}
