// A Grafana dashboard as JSON holds enum members by their string values ("absolute", not
// ThresholdsMode.Absolute): Plain<T> is T with every string enum replaced by the union of its values, so
// `satisfies Plain<Dashboard>` checks a JSON dashboard against @grafana/schema's Dashboard type, unknown
// keys included (tests/test_dashboard_schema.py).
export type Plain<T> = T extends string
  ? `${T}`
  : T extends (infer U)[]
    ? Plain<U>[]
    : T extends object
      ? { [K in keyof T]: Plain<T[K]> }
      : T;
