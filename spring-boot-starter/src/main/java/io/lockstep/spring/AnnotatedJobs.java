package io.lockstep.spring;

import io.lockstep.scheduler.config.ConfigException;
import io.lockstep.scheduler.config.ConfigProblem;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * The {@link LockstepJob} methods of the application's beans, found from the bean definitions'
 * types (no bean is created for this), with their attributes' {@code ${...}} resolved. Each
 * becomes one job of the YAML's shape ({@link #asYaml()}), checked by the same loader as the file.
 */
final class AnnotatedJobs {

    /** One annotated method: the bean that has it, the method, and the job's YAML keys. */
    record Declared(String beanName, Method method, Map<String, Object> yaml) {

        String where() {
            return "@LockstepJob on " + ClassUtils.getUserClass(method.getDeclaringClass()).getName() + "." + method.getName() + "()";
        }

        String name() {
            return (String) yaml.get("name");
        }
    }

    private final List<Declared> declared;

    private AnnotatedJobs(List<Declared> declared) {
        this.declared = List.copyOf(declared);
    }

    static AnnotatedJobs find(ConfigurableListableBeanFactory beans) {
        List<Declared> found = new ArrayList<>();
        List<ConfigProblem> problems = new ArrayList<>();
        for (String beanName : beans.getBeanDefinitionNames()) {
            Class<?> type = beans.getType(beanName, false);
            if (type == null) {
                continue;
            }
            Map<Method, LockstepJob> methods = MethodIntrospector.selectMethods(ClassUtils.getUserClass(type),
                    (MethodIntrospector.MetadataLookup<LockstepJob>) m -> AnnotatedElementUtils.findMergedAnnotation(m, LockstepJob.class));
            for (Map.Entry<Method, LockstepJob> e : methods.entrySet()) {
                Method m = e.getKey();
                Declared d = new Declared(beanName, m, yaml(e.getValue(), beans));
                Class<?>[] params = m.getParameterTypes();
                if (Modifier.isStatic(m.getModifiers()) || params.length > 1
                        || params.length == 1 && !params[0].isAssignableFrom(io.lockstep.scheduler.JobContext.class)) {
                    problems.add(new ConfigProblem(d.where(), 0, "", "a job method takes no argument or one JobContext, and is not static"));
                }
                found.add(d);
            }
        }
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        found.sort(java.util.Comparator.comparing(Declared::name, java.util.Comparator.nullsFirst(String::compareTo)));
        return new AnnotatedJobs(found);
    }

    private static Map<String, Object> yaml(LockstepJob a, ConfigurableListableBeanFactory beans) {
        Map<String, Object> job = new LinkedHashMap<>();
        put(job, "name", a.name(), beans);
        put(job, "cron", a.cron(), beans);
        job.put("class", MethodJob.class.getName());
        put(job, "zone", a.zone(), beans);
        put(job, "lease", a.lease(), beans);
        put(job, "misfireGrace", a.misfireGrace(), beans);
        put(job, "overlap", a.overlap(), beans);
        put(job, "recover", a.recover(), beans);
        put(job, "catchUp", a.catchUp(), beans);
        put(job, "timeout", a.timeout(), beans);
        put(job, "enabled", a.enabled(), beans);
        put(job, "jitter", a.jitter(), beans);
        if (a.skipOn().length > 0) {
            job.put("skipOn", java.util.Arrays.stream(a.skipOn()).map(beans::resolveEmbeddedValue).toList());
        }
        if (a.onlyOn().length > 0) {
            job.put("onlyOn", java.util.Arrays.stream(a.onlyOn()).map(beans::resolveEmbeddedValue).toList());
        }
        Map<String, Object> expect = new LinkedHashMap<>();
        put(expect, "succeededWithin", a.expectSucceededWithin(), beans);
        put(expect, "successEvery", a.expectSuccessEvery(), beans);
        if (!expect.isEmpty()) {
            job.put("expect", expect);
        }
        if (a.uses().length > 0) {
            job.put("uses", java.util.Arrays.stream(a.uses()).map(beans::resolveEmbeddedValue).toList());
        }
        if (job.get("enabled") instanceof String s && (s.equals("true") || s.equals("false"))) {
            job.put("enabled", Boolean.valueOf(s)); // the YAML's boolean, as the file would write it
        }
        return job;
    }

    private static void put(Map<String, Object> job, String key, String value, ConfigurableListableBeanFactory beans) {
        if (!value.isEmpty()) {
            String resolved = beans.resolveEmbeddedValue(value);
            job.put(key, resolved == null ? value : resolved);
        }
    }

    boolean isEmpty() {
        return declared.isEmpty();
    }

    List<Declared> all() {
        return declared;
    }

    /** {@code jobs[i]} of {@link #asYaml()} is {@code all().get(i)}. */
    List<Map<String, Object>> asYaml() {
        return declared.stream().map(Declared::yaml).toList();
    }
}
