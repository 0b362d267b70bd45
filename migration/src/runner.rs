//! Applying and reverting the migrations, each recorded in `seaql_migrations` (the table
//! sea-orm-migration kept when it ran them, so a database it migrated goes on from there).
//!
//! Ours rather than sea-orm-migration: that crate also brings a schema-discovery library and
//! sea-orm's default features (decimal, UUID and time types for every driver), about a tenth
//! of a cold release build, for the few functions below.

use sea_orm::sea_query::{
    ColumnDef, Expr, ExprTrait, IndexCreateStatement, IndexDropStatement, Query, Table,
    TableAlterStatement, TableCreateStatement, TableDropStatement,
};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseExecutor, DbBackend, DbErr, IntoDatabaseExecutor,
    SqliteTransactionMode, Statement, StatementBuilder, TransactionOptions, TransactionTrait,
};
use std::collections::BTreeSet;

/// Where applied migrations are recorded.
const TABLE: &str = "seaql_migrations";

/// A migration's name: its file's name (given by `#[derive(DeriveMigrationName)]`).
pub trait MigrationName {
    fn name(&self) -> &str;
}

/// One step of the schema.
#[async_trait::async_trait]
pub trait MigrationTrait: MigrationName + Send + Sync {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr>;

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        Err(DbErr::Migration(format!(
            "{} cannot be reverted",
            self.name()
        )))
    }

    /// Whether the step runs in a transaction: `None` on PostgreSQL only (the others commit
    /// each change to a table's structure at once anyway).
    fn use_transaction(&self) -> Option<bool> {
        None
    }
}

/// What a migration works on: the database, or the transaction it runs in.
pub struct SchemaManager<'c> {
    conn: DatabaseExecutor<'c>,
}

impl<'c> SchemaManager<'c> {
    pub fn new(conn: impl IntoDatabaseExecutor<'c>) -> Self {
        Self {
            conn: conn.into_database_executor(),
        }
    }

    pub fn get_connection(&self) -> &DatabaseExecutor<'c> {
        &self.conn
    }

    pub fn get_database_backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    async fn execute(&self, statement: impl StatementBuilder) -> Result<(), DbErr> {
        self.conn.execute(&statement).await.map(|_| ())
    }

    pub async fn create_table(&self, statement: TableCreateStatement) -> Result<(), DbErr> {
        self.execute(statement).await
    }

    pub async fn alter_table(&self, statement: TableAlterStatement) -> Result<(), DbErr> {
        self.execute(statement).await
    }

    pub async fn drop_table(&self, statement: TableDropStatement) -> Result<(), DbErr> {
        self.execute(statement).await
    }

    pub async fn create_index(&self, statement: IndexCreateStatement) -> Result<(), DbErr> {
        self.execute(statement).await
    }

    pub async fn drop_index(&self, statement: IndexDropStatement) -> Result<(), DbErr> {
        self.execute(statement).await
    }

    /// Whether the table `name` exists (in the current schema on PostgreSQL, the current
    /// database on MySQL).
    pub async fn has_table(&self, name: &str) -> Result<bool, DbErr> {
        let backend = self.get_database_backend();
        let sql = match backend {
            DbBackend::Sqlite => {
                "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?"
            }
            DbBackend::Postgres => {
                "SELECT COUNT(*) AS n FROM information_schema.tables \
                 WHERE table_schema = CURRENT_SCHEMA() AND table_type = 'BASE TABLE' \
                 AND table_name = $1"
            }
            _ => {
                "SELECT COUNT(*) AS n FROM information_schema.tables \
                 WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' \
                 AND table_name = ?"
            }
        };
        let statement = Statement::from_sql_and_values(backend, sql, [name.into()]);
        let row = self.conn.query_one_raw(statement).await?;
        let n: i64 = match row {
            Some(row) => row.try_get("", "n")?,
            None => 0,
        };
        Ok(n > 0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationStatus {
    Pending,
    Applied,
}

impl std::fmt::Display for MigrationStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pending => "Pending",
            Self::Applied => "Applied",
        })
    }
}

/// A migration and whether the database has it.
pub struct Migration {
    migration: Box<dyn MigrationTrait>,
    status: MigrationStatus,
}

impl Migration {
    pub fn name(&self) -> &str {
        self.migration.name()
    }

    pub fn status(&self) -> MigrationStatus {
        self.status
    }
}

/// The list of migrations, and what is done with it.
#[async_trait::async_trait]
pub trait MigratorTrait: Send {
    /// Every migration, oldest first.
    fn migrations() -> Vec<Box<dyn MigrationTrait>>;

    /// Every migration with its status; an error if the database has one this list lacks.
    async fn get_migration_with_status(db: &DatabaseConnection) -> Result<Vec<Migration>, DbErr> {
        install(db).await?;
        let applied = applied(db).await?;
        let migrations: Vec<Migration> = Self::migrations()
            .into_iter()
            .map(|migration| {
                let status = match applied.contains(migration.name()) {
                    true => MigrationStatus::Applied,
                    false => MigrationStatus::Pending,
                };
                Migration { migration, status }
            })
            .collect();
        let known: BTreeSet<&str> = migrations.iter().map(Migration::name).collect();
        let missing: Vec<String> = applied
            .iter()
            .filter(|version| !known.contains(version.as_str()))
            .map(|version| {
                format!("the database has migration {version}, which this inklink does not know")
            })
            .collect();
        match missing.is_empty() {
            true => Ok(migrations),
            false => Err(DbErr::Migration(missing.join("\n"))),
        }
    }

    async fn get_pending_migrations(db: &DatabaseConnection) -> Result<Vec<Migration>, DbErr> {
        Ok(only(
            Self::get_migration_with_status(db).await?,
            MigrationStatus::Pending,
        ))
    }

    async fn get_applied_migrations(db: &DatabaseConnection) -> Result<Vec<Migration>, DbErr> {
        Ok(only(
            Self::get_migration_with_status(db).await?,
            MigrationStatus::Applied,
        ))
    }

    /// Applies the pending migrations, oldest first (at most `steps` of them).
    async fn up(db: &DatabaseConnection, steps: Option<u32>) -> Result<(), DbErr> {
        let pending = Self::get_pending_migrations(db).await?;
        let steps = steps.map_or(usize::MAX, |n| n as usize);
        for Migration { migration, .. } in pending.into_iter().take(steps) {
            tracing::info!(migration = migration.name(), "applying migration");
            step(db, migration.as_ref(), Direction::Up).await?;
        }
        Ok(())
    }

    /// Reverts the applied migrations, newest first (at most `steps` of them).
    async fn down(db: &DatabaseConnection, steps: Option<u32>) -> Result<(), DbErr> {
        let applied = Self::get_applied_migrations(db).await?;
        let steps = steps.map_or(usize::MAX, |n| n as usize);
        for Migration { migration, .. } in applied.into_iter().rev().take(steps) {
            tracing::info!(migration = migration.name(), "reverting migration");
            step(db, migration.as_ref(), Direction::Down).await?;
        }
        Ok(())
    }
}

/// The migrations of `all` that have `status`, in order.
fn only(all: Vec<Migration>, status: MigrationStatus) -> Vec<Migration> {
    all.into_iter().filter(|m| m.status == status).collect()
}

#[derive(Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// Applies or reverts `migration` and records it, in one transaction when it wants one.
async fn step(
    db: &DatabaseConnection,
    migration: &dyn MigrationTrait,
    direction: Direction,
) -> Result<(), DbErr> {
    let backend = db.get_database_backend();
    let in_transaction = migration
        .use_transaction()
        .unwrap_or(backend == DbBackend::Postgres);
    let run = async |manager: &SchemaManager<'_>| {
        let name = migration.name();
        if backend == DbBackend::Sqlite {
            // SQLite checks a change of the schema against the schema this connection read
            // last, and another connection of the pool may have changed it since (a column
            // dropped by the step before): reading the schema table makes it read it again.
            manager
                .get_connection()
                .execute_unprepared("SELECT COUNT(*) FROM sqlite_master")
                .await?;
        }
        match direction {
            Direction::Up => {
                migration.up(manager).await?;
                let applied_at = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |since| since.as_secs() as i64);
                let insert = Query::insert()
                    .into_table(TABLE)
                    .columns(["version", "applied_at"])
                    .values_panic([name.into(), applied_at.into()])
                    .to_owned();
                manager.get_connection().execute(&insert).await?;
            }
            Direction::Down => {
                migration.down(manager).await?;
                let delete = Query::delete()
                    .from_table(TABLE)
                    .and_where(Expr::col("version").eq(name))
                    .to_owned();
                manager.get_connection().execute(&delete).await?;
            }
        }
        Ok::<(), DbErr>(())
    };
    match in_transaction {
        true => {
            // SQLite's write lock at once (see inklink's `db::begin_write`): a migration that
            // reads before it writes would otherwise fail when a click is stored meanwhile.
            let options = TransactionOptions {
                sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                ..TransactionOptions::default()
            };
            let transaction = db.begin_with_options(options).await?;
            match run(&SchemaManager::new(&transaction)).await {
                Ok(()) => transaction.commit().await,
                Err(err) => {
                    // At once: a dropped transaction holds its locks until its connection is
                    // next used (MySQL's metadata locks block other instances' changes).
                    if let Err(rollback) = transaction.rollback().await {
                        tracing::warn!(error = %rollback, "rollback failed");
                    }
                    Err(err)
                }
            }
        }
        false => run(&SchemaManager::new(db)).await,
    }
}

/// Makes the table of applied migrations if there is none.
async fn install(db: &DatabaseConnection) -> Result<(), DbErr> {
    let create = Table::create()
        .table(TABLE)
        .if_not_exists()
        .col(ColumnDef::new("version").string().not_null().primary_key())
        .col(ColumnDef::new("applied_at").big_integer().not_null())
        .to_owned();
    db.execute(&create).await.map(|_| ())
}

/// The names of the applied migrations.
async fn applied(db: &DatabaseConnection) -> Result<BTreeSet<String>, DbErr> {
    let select = Query::select().column("version").from(TABLE).to_owned();
    db.query_all(&select)
        .await?
        .iter()
        .map(|row| row.try_get("", "version"))
        .collect()
}
